"""The `data` section of a run's config: where the problems are, which domain, how states are embedded,
and where the content-keyed data cache lives (see `statecentric_jax/sections.py`)."""

from __future__ import annotations

from typing import Any

import ml_collections

from statecentric_jax.embedding.encoders import KINDS as ENCODINGS
from statecentric_jax.embedding.encoders import WL_ALGORITHMS, WL_GRAPHS
from statecentric_jax.sections import require_int, require_one_of


def data() -> ml_collections.ConfigDict:
    section = ml_collections.ConfigDict()
    section.pddl_root = "data"
    section.domain = "blocks"
    section.encoding = "wl"
    section.cache_dir = "runs/cache"
    section.jobs = 0  # processes of expert planners, aggregation's planner calls, selection decoding; 0 = one per core
    return section


# Settings of the `data` section beyond the paper's, absent from its configs (`config.recommended()` sets
# them), here at the values that mean the paper's behaviour. Expert plans (problems/plan_generation.py): A*
# with LM-cut, then the fallback; a training problem without a plan stops the run unless skip_unsolved.
# A root in the IPC layout: positions among training/easy (problems/layout.py) fitted on (train,
# validation) and left for selection (method/selection.py).
EXTRA_DEFAULTS = {
    "expert_astar_seconds": 60.0,
    "expert_fallback": "gbfs_ff",
    "expert_fallback_seconds": 300.0,
    "skip_unsolved": False,
    "ipc_train": "1-29/2",
    "ipc_validation": "2-30/2",
    "ipc_selection": "40,50,60,70",
}


def extra(config: ml_collections.ConfigDict, name: str) -> Any:
    """A `data` setting of `EXTRA_DEFAULTS`: the config's, else its default."""
    return config.data.get(name, EXTRA_DEFAULTS[name])


def check(config: ml_collections.ConfigDict) -> None:
    """Refuse a `data` section no encoder understands."""
    require_one_of("data.encoding", config.data.encoding, ENCODINGS)
    require_int("data.jobs", config.data.jobs, 0)


def check_wl(prefix: str, iterations: object, algorithm: object, graph: object) -> None:
    """Refuse the WL settings `<prefix>.wl_iterations`, `.wl_algorithm`, `.wl_graph` of an embedding."""
    require_int(f"{prefix}.wl_iterations", iterations, 1)
    require_one_of(f"{prefix}.wl_algorithm", algorithm, WL_ALGORITHMS)
    require_one_of(f"{prefix}.wl_graph", graph, WL_GRAPHS)
