"""How a run's learned cost-to-go ranks the states of larger problems, along Fast Downward's plans.

    python -m benchmarks.cost_to_go \
        --run=runs/generalization/logistics/model-state-alpha10-aggregation4-calls200-value \
        --pddl_root=runs/generalization/large-problems --domain=logistics --split=large

For each problem Fast Downward plans (A*+LM-cut, then GBFS+FF or `--fallback`, within the time
limits); the states along that plan are embedded as decoding embeds them, and the run's cost-to-go
h(s_t) is set against the steps left on the plan: their correlation, the share of plan steps along
which h falls (a greedy search follows those without backtracking), h at the start and at the goal
(where the true value is 0), and the climb out of the start: how far h rises along the plan before
it first falls below its value at the start, and after how many steps. The steps left on a GBFS plan
only bound the optimal cost-to-go from above. It tells a heuristic that ranks badly from one that
ranks well but leaves plateaus for the search.

`--start=lowest` plans instead from where the run's best-first search gets stuck: the state of
lowest cost-to-go among those it generated within `--budget` expansions (the run's other decoding
settings). Greedy best-first search must expand every open state below the highest h on the way
out before it takes that way, so the climb measures the basin it is caught in.
"""

from __future__ import annotations

import dataclasses
import pathlib
import tempfile
from collections.abc import Sequence

import numpy as np
from absl import flags

from benchmarks.common import cost_to_go_of, define_best_first_flags, print_header
from statecentric_jax.cli import run_main
from statecentric_jax.errors import InputError
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.learning.train import LoadedModel
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.tasks import Task, load_task, problem_from_state
from statecentric_jax.problems import fast_downward, layout
from statecentric_jax.search.base import DecodeConfig, Instance
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import Expansion
from statecentric_jax.search.strategies import Stop, Strategy, make_strategy

_RUN = flags.DEFINE_string("run", None, "A trained run with a cost-to-go (config value.kind).", required=True)
_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root: <root>/<domain>/{domain.pddl,<split>/}.")
_DOMAIN = flags.DEFINE_string("domain", None, "Domain (default: the run's).")
_SPLIT = flags.DEFINE_string("split", "validation", "Split of --pddl_root.")
_ASTAR_LIMIT = flags.DEFINE_float("astar_time_limit", 10, "Seconds for A*+LM-cut per problem.")
_GBFS_LIMIT = flags.DEFINE_float("gbfs_time_limit", 30, "Seconds for the fallback per problem, if A* found no plan.")
_FALLBACK = flags.DEFINE_enum(
    "fallback", "gbfs_ff", list(fast_downward.FALLBACKS), "The planner after A*: GBFS+FF, or LAMA's first iteration."
)
_START = flags.DEFINE_enum(
    "start", "initial", ["initial", "lowest"], "Plan from the initial state, or from where best-first gets stuck."
)
_PROBLEMS = flags.DEFINE_list("problems", None, "Only these problems (file stems), e.g. logistics-large-04.")
_DETAILS = flags.DEFINE_bool("details", False, "After the table: each plan's actions, with h after each.")
_SETTINGS = define_best_first_flags("--start=lowest")  # --budget: expansions before its lowest state

COLUMNS = (
    "problem",
    "start: depth, goals missing",
    "plan length (planner)",
    "h at start",
    "h at goal",
    "correlation",
    "steps where h falls",
    "climb out: h rises by, over steps",
)


@dataclasses.dataclass
class _Lowest:
    """A strategy that records the state of lowest cost-to-go among the children it is given."""

    strategy: Strategy
    value: float = np.inf
    state: frozenset[str] | None = None
    depth: int = 0

    def select(self) -> list:
        return self.strategy.select()

    def update(self, expansions: Sequence[Expansion]) -> Stop | None:
        for expansion in expansions:
            if expansion.values is not None and len(expansion.values):
                best = int(np.argmin(expansion.values))
                if expansion.values[best] < self.value:
                    self.value, self.state = float(expansion.values[best]), expansion.states[best]
                    self.depth = expansion.node.depth + 1
        return self.strategy.update(expansions)


def lowest_state(run: LoadedModel, task: Task, settings: DecodeConfig) -> tuple[frozenset[str], int, bool]:
    """The state of lowest cost-to-go that best-first search generates on `task` (the initial state
    if it generates none lower), its depth, and whether the search solved the problem."""
    made: list[_Lowest] = []

    def watched(config: DecodeConfig, inst: Instance, guided: bool) -> Strategy:
        made.append(_Lowest(make_strategy(config, inst, guided)))
        return made[-1]

    result = decode([task], run.model, run.encoder, settings, cost_to_go=run.cost_to_go, make=watched)[0]
    if not made or made[0].state is None:
        return task.init, 0, result.solved
    return made[0].state, made[0].depth, result.solved


def climb(h: np.ndarray) -> tuple[float, int | None]:
    """How far h rises above h[0] before it first falls below it, and at which step it does (None: never)."""
    below = np.flatnonzero(h[1:] < h[0])
    end = int(below[0]) + 1 if len(below) else None
    return float(max(h[: end if end is not None else len(h)].max() - h[0], 0.0)), end


def along_plan(run: LoadedModel, task: Task, plan: list[str]) -> np.ndarray:
    """The cost-to-go of each state along `plan`."""
    states = simulate(task, plan)
    return cost_to_go_of(run, task, states, [None, *states[:-1]])


def main(argv):
    del argv
    run = load_run(_RUN.value)
    if run.cost_to_go is None:
        raise InputError(_RUN.value, "this run has no cost-to-go (config value.kind is none)")
    domain = _DOMAIN.value or run.config.data.domain
    domain_file = layout.domain_file(_PDDL_ROOT.value, domain)
    settings = _SETTINGS(run)
    print_header(COLUMNS)
    configs = fast_downward.default_configs(_ASTAR_LIMIT.value, _GBFS_LIMIT.value, _FALLBACK.value)
    planners = {fast_downward.ASTAR_LMCUT: "A*", fast_downward.GBFS_FF: "GBFS", fast_downward.LAMA_FIRST: "LAMA"}
    correlations, falling = [], []
    details = []
    for problem_file in layout.problem_files(_PDDL_ROOT.value, domain, _SPLIT.value):
        name = problem_file.stem
        if _PROBLEMS.value is not None and name not in _PROBLEMS.value:
            continue
        task = load_task(domain_file, problem_file)
        state, depth, solved_by_search = (
            lowest_state(run, task, settings) if _START.value == "lowest" else (task.init, 0, False)
        )
        start = f"{depth}, {len(task.missing_goal(state))}"
        if solved_by_search:
            print(f"| {name} | {start} (best-first solves it) | | | | | | |", flush=True)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            started_there = pathlib.Path(tmp) / problem_file.name
            started_there.write_text(problem_from_state(task, state, name))
            solved = fast_downward.solve(domain_file, started_there, configs)
        if solved.status != "solved":
            print(f"| {name} | {start} | no plan ({solved.status}) | | | | | |", flush=True)
            continue
        h = along_plan(run, dataclasses.replace(task, init=state), solved.plan)
        left = np.arange(len(h) - 1, -1, -1)
        correlation = float(np.corrcoef(h, left)[0, 1]) if len(h) > 2 else float("nan")
        share = float(np.mean(np.diff(h) < 0)) if len(h) > 1 else float("nan")
        rise, steps = climb(h)
        if _DETAILS.value:
            missing = " ".join(sorted(task.missing_goal(state)))
            steps_and_h = "\n".join(f"  {action} -> {value:.1f}" for action, value in zip(solved.plan, h[1:]))
            details.append(f"{name}: h {h[0]:.1f} at the start, goals missing there: {missing}\n{steps_and_h}")
        if len(h) > 2:
            correlations.append(correlation)
            falling.append(share)
        print(
            f"| {name} | {start} | {len(solved.plan)} ({planners[str(solved.config)]}) | {h[0]:.1f} | {h[-1]:.1f} "
            f"| {correlation:.3f} | {share:.2f} | {rise:.1f} over {steps if steps is not None else 'all'} |",
            flush=True,
        )
    if details:
        print("\n" + "\n\n".join(details))
    if correlations:
        mean = f"correlation {np.mean(correlations):.3f}, steps where h falls {np.mean(falling):.2f}"
        print(f"\nmean over the {len(correlations)} problems with a plan of 2 steps or more: {mean}")


if __name__ == "__main__":
    run_main(main)
