"""A run's configuration: the sections each layer owns, composed into one ml_collections.ConfigDict.

`base()` holds the defaults (the paper's hyperparameters, Table 7), `table1` one column of the paper's
Table 1, `best` the recommended configuration beyond the paper. Each section is defined and checked by the
layer that reads it (`statecentric_jax/sections.py`); `read` loads a finished run's config.json, written
by this or older code, with the settings added since at their defaults.

The files in `configs/` are what users pass to `--config`; they only name a configuration here. The values
live here, importable, because a config file loaded by path cannot import a sibling file, and tests and
benchmarks build the same configs without going through a file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib

import ml_collections

from statecentric_jax import sections
from statecentric_jax.embedding import config as embedding_config
from statecentric_jax.errors import InputError
from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning import train
from statecentric_jax.method import config as method_config
from statecentric_jax.search import config as search_config


def base() -> ml_collections.ConfigDict:
    """Defaults shared by every configuration."""
    config = ml_collections.ConfigDict()
    config.seed = 13
    config.data = embedding_config.data()
    config.model = learning_config.model()
    config.lstm = learning_config.lstm()
    config.xgb = learning_config.xgb()
    config.decode = search_config.decode()
    config.value = learning_config.value()
    config.aggregation = method_config.aggregation()
    config.ensemble = learning_config.ensemble()
    return config


def check(config: ml_collections.ConfigDict) -> None:
    """Refuse settings no layer understands, before any work is done."""
    embedding_config.check(config)
    learning_config.check(config)
    search_config.check(config)
    method_config.check(config)


def table1(domain: str, encoding: str, kind: str, mode: str) -> ml_collections.ConfigDict:
    """One state-centric column of the paper's Table 1 for one domain."""
    config = base()
    config.data.domain = domain
    config.data.encoding = encoding
    config.model.kind = kind
    config.model.mode = mode
    check(config)
    return config


def with_defaults(stored: dict) -> dict:
    """A stored config (as JSON) with the settings added to `base()` since it was written, at their defaults."""
    return sections.with_defaults(stored, json.loads(base().to_json()))


def read(workdir: str | os.PathLike) -> ml_collections.ConfigDict:
    """The config of a finished run (its config.json, written by this or older code), complete and checked."""
    stored = train.read_config(workdir)  # the sections training reads, complete and checked
    try:
        config = ml_collections.ConfigDict(with_defaults(json.loads(stored.to_json())))
        check(config)
    except InputError as e:
        raise InputError(pathlib.Path(workdir) / train.CONFIG_FILE, e.reason) from None
    return config


def same_run(stored: ml_collections.ConfigDict, wanted: ml_collections.ConfigDict) -> bool:
    """Whether a finished run's config is `wanted` (see `run_identity`)."""
    return run_identity(stored) == run_identity(wanted)


def run_identity(config: ml_collections.ConfigDict | dict) -> dict:
    """What a run's models and plans depend on: its config, but not where the content-keyed cache is or
    how many processes fill it, and the PDDL root however it is spelled. Settings added to `base()` after a
    run was trained are missing from its config.json and mean their defaults, so such a run still resumes."""
    identity = with_defaults(config if isinstance(config, dict) else json.loads(config.to_json()))
    identity["data"].pop("cache_dir")
    identity["data"].pop("jobs")
    identity["data"]["pddl_root"] = os.path.realpath(identity["data"]["pddl_root"])
    return identity


def training_identity(config: ml_collections.ConfigDict | dict) -> dict:
    """What a run's training depends on: `run_identity` less the selection menu, which only chooses among trained
    runs (`method/selection.py`), so that a menu change neither trains nor aggregates a candidate again."""
    identity = run_identity(config)
    identity.pop("selection", None)
    return identity


@dataclasses.dataclass(frozen=True)
class BestSettings:
    """What the recommended configuration sets per domain, chosen on the validation split and our own
    larger problems, never a test split."""

    value_weight: float  # best-first priority = cost-to-go + weight x the model's distance (0: it breaks ties)
    aggregation_rounds: int  # rounds of expert data aggregation that refit only the cost-to-go
    budget: int  # best-first expansions per problem
    path_weight: float = 0.0  # + weight x plan length so far in the priority (weighted A*; 0: greedy)
    # the cost-to-go's own φ: WL with this many iterations, set hash, colours from every state it is fitted on
    # (value.wl_vocabulary=fitted); 0: the transition model's φ
    value_wl_iterations: int = 0
    value_goal_paths: int = 0  # goal paths of at most this many edges beside the cost-to-go's φ; 0: none
    random_walks: int = 0  # labelled random-walk states per train/validation problem (aggregation round 0)
    max_planner_calls: int = 200  # per aggregation round


BEST = {
    "blocks": BestSettings(
        value_weight=0.0,
        aggregation_rounds=0,
        budget=10_000,
        value_wl_iterations=3,
        random_walks=80,
        max_planner_calls=1_000,
    ),
    "gripper": BestSettings(value_weight=0.0, aggregation_rounds=0, budget=10_000),
    "logistics": BestSettings(
        value_weight=0.0, aggregation_rounds=4, budget=320_000, path_weight=0.2, value_goal_paths=4
    ),
    "visitall": BestSettings(value_weight=1.0, aggregation_rounds=0, budget=10_000),
}


def best(domain: str) -> ml_collections.ConfigDict:
    """The recommended configuration beyond the paper (`configs/<domain>_best.py`).

    The paper's WL-XGB delta transition model, a ridge cost-to-go on φ(s) (for Logistics with goal paths
    beside it, refitted after rounds of expert data aggregation; for Blocks on a WL φ of its own, fitted
    on labelled random-walk states too), and best-first decoding ordered by the cost-to-go mixed with the
    model's distance. Selected on the validation split and on our own larger problems
    (`benchmarks/generalization.py`).
    """
    config = table1(domain, "wl", "xgb", "delta")
    config.xgb.n_jobs = 1  # decoding predicts a few rows at a time: one thread is fastest and load-proof
    config.value.kind = "ridge"
    config.decode.strategy = "best_first"
    settings = BEST[domain]
    config.decode.value_weight = settings.value_weight
    config.decode.budget = settings.budget
    config.decode.path_weight = settings.path_weight
    config.aggregation.rounds = settings.aggregation_rounds
    config.aggregation.retrain = "value"
    config.aggregation.random_walks = settings.random_walks
    config.aggregation.max_planner_calls = settings.max_planner_calls
    config.value.goal_paths = settings.value_goal_paths
    if settings.value_wl_iterations:
        config.value.embedding = "own"
        config.value.wl_iterations = settings.value_wl_iterations
        config.value.wl_multiset_hash = False
        config.value.wl_vocabulary = "fitted"
    return config


def recommended() -> ml_collections.ConfigDict:
    """The recommended configuration for any domain (`configs/recommended.py`): a linear (ridge) delta
    transition model, whose cost does not grow with the WL dimension, a ridge cost-to-go and best-first
    decoding; the rest is chosen per domain on its training problems (`method/selection.py`, `selection`).
    The domain is named on the command line (`data.domain`), the problems by `data.pddl_root`."""
    config = base()
    config.data.domain = ""
    config.data.update(embedding_config.EXTRA_DEFAULTS)
    config.data.skip_unsolved = True  # a training problem the expert does not solve is left out
    config.data.expert_astar_seconds = 30.0
    config.data.expert_fallback = "lama_first"
    config.data.expert_fallback_seconds = 60.0
    config.model.kind, config.model.mode = "ridge", "delta"
    config.ridge = learning_config.ridge()
    config.value.kind = "ridge"
    config.decode.strategy = "best_first"
    config.decode.budget = 100_000
    config.aggregation.retrain = "value"
    config.aggregation.time_limit = 20.0
    config.aggregation.budget = 10_000  # as `selection.budget`: a training problem is smaller than the ones selected on
    config.selection = method_config.selection()
    return config
