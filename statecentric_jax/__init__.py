"""State-centric generalized planning in JAX: learn a transition model of WL state embeddings from solved
problems, then plan for larger problems by decoding it over true symbolic successors.

The public API, three calls (each imports the library only when called, so importing the package is cheap):

    import statecentric_jax
    from statecentric_jax import config

    run = config.table1("blocks", "wl", "xgb", "delta")  # one configuration of the paper's Table 1
    run.data.pddl_root = "data"
    trained = statecentric_jax.train(run, "runs/blocks")
    plan = statecentric_jax.plan(trained, "domain.pddl", "problem.pddl", beam_width=5)
    summary = statecentric_jax.evaluate(trained, "test-extrapolation")
"""

from __future__ import annotations

import os
import pathlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ml_collections

__all__ = ["evaluate", "plan", "train"]


def train(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> pathlib.Path:
    """Train the run `config` describes into `workdir` with seed `config.seed`, as `launch/train.py` does, and
    return the run to plan with: plans and embedded datasets first (cached in `config.data.cache_dir`), then
    the model, and with the config's options the cost-to-go, rounds of expert data aggregation and ensemble
    members. A config with a `selection` section (`configs/recommended.py`) first selects its settings on
    larger training problems and returns the chosen run, `<workdir>/run`."""
    from statecentric_jax.method.selection import train_configured

    return train_configured(config, workdir)


def plan(
    workdir: str | os.PathLike, domain_file: str | os.PathLike, problem_file: str | os.PathLike, **decode_overrides: Any
) -> list[str] | None:
    """The plan the run in `workdir` finds for one problem, as action strings like "(pick-up a)", or None
    when it does not reach the goal. `decode_overrides` replace the run's decoding settings
    (`statecentric_jax.search.base.DecodeConfig` fields, e.g. strategy="best_first", budget=20000)."""
    from statecentric_jax.method.evaluation import decode_problem

    result = decode_problem(workdir, domain_file, problem_file, **decode_overrides)
    return list(result.plan) if result.solved else None


def evaluate(
    workdir: str | os.PathLike,
    split: str,
    pddl_root: str | os.PathLike | None = None,
    use_val: bool = False,
    **decode_overrides: Any,
) -> dict:
    """Decode every problem of `split` (e.g. "test-extrapolation") under `pddl_root` (default: the run's)
    with the run in `workdir`, as `launch/evaluate.py` does; returns the summary (problems, solved, ...),
    and writes it with every problem's result to `<workdir>/eval/<split>/`. `use_val` also checks each
    plan with VAL's `Validate`; `decode_overrides` as in `plan`."""
    from statecentric_jax.method.evaluation import evaluate as evaluate_split

    return evaluate_split(workdir, split, pddl_root, use_val, **decode_overrides)
