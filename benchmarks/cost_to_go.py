"""How a run's learned cost-to-go ranks the states of larger problems, along Fast Downward's plans.

    python -m benchmarks.cost_to_go \
        --run=runs/generalization/logistics/model-state-alpha10-aggregation4-calls200-value \
        --pddl_root=runs/generalization/large-problems --domain=logistics --split=large

For each problem Fast Downward plans (A*+LM-cut, then GBFS+FF, within the time limits); the states
along that plan are embedded as decoding embeds them, and the run's cost-to-go h(s_t) is set against
the steps left on the plan: their correlation, the share of plan steps along which h falls (a greedy
search follows those without backtracking), and h at the start and at the goal (where the true value
is 0). The steps left on a GBFS plan only bound the optimal cost-to-go from above. It tells a
heuristic that ranks badly from one that ranks well but leaves plateaus for the search.
"""

from __future__ import annotations

import numpy as np
from absl import flags

from benchmarks.common import cost_to_go_features, print_header
from statecentric_jax.cli import run_main
from statecentric_jax.errors import InputError
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.learning.train import LoadedModel
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.tasks import Task, load_task
from statecentric_jax.problems import fast_downward, layout

_RUN = flags.DEFINE_string("run", None, "A trained run with a cost-to-go (config value.kind).", required=True)
_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root: <root>/<domain>/{domain.pddl,<split>/}.")
_DOMAIN = flags.DEFINE_string("domain", None, "Domain (default: the run's).")
_SPLIT = flags.DEFINE_string("split", "validation", "Split of --pddl_root.")
_ASTAR_LIMIT = flags.DEFINE_float("astar_time_limit", 10, "Seconds for A*+LM-cut per problem.")
_GBFS_LIMIT = flags.DEFINE_float("gbfs_time_limit", 30, "Seconds for GBFS+FF per problem, if A* found no plan.")

COLUMNS = ("problem", "plan length (planner)", "h at start", "h at goal", "correlation", "steps where h falls")


def along_plan(run: LoadedModel, task: Task, plan: list[str]) -> np.ndarray:
    """The cost-to-go of each state along `plan`."""
    states = simulate(task, plan)
    features = cost_to_go_features(run, [(task, state) for state in states], [None, *states[:-1]])
    goal = np.asarray(run.encoder.embed_goals([task]), np.float32)
    assert run.cost_to_go is not None
    return run.cost_to_go.estimate(features, np.repeat(goal, len(states), axis=0))


def main(argv):
    del argv
    run = load_run(_RUN.value)
    if run.cost_to_go is None:
        raise InputError(_RUN.value, "this run has no cost-to-go (config value.kind is none)")
    domain = _DOMAIN.value or run.config.data.domain
    domain_file = layout.domain_file(_PDDL_ROOT.value, domain)
    print_header(COLUMNS)
    configs = fast_downward.default_configs(_ASTAR_LIMIT.value, _GBFS_LIMIT.value)
    correlations, falling = [], []
    for problem_file in layout.problem_files(_PDDL_ROOT.value, domain, _SPLIT.value):
        name = problem_file.stem
        solved = fast_downward.solve(domain_file, problem_file, configs)
        if solved.status != "solved":
            print(f"| {name} | no plan ({solved.status}) | | | | |", flush=True)
            continue
        task = load_task(domain_file, problem_file)
        h = along_plan(run, task, solved.plan)
        left = np.arange(len(h) - 1, -1, -1)
        correlation = float(np.corrcoef(h, left)[0, 1]) if len(h) > 2 else float("nan")
        share = float(np.mean(np.diff(h) < 0)) if len(h) > 1 else float("nan")
        correlations.append(correlation)
        falling.append(share)
        planner = "A*" if solved.config == fast_downward.ASTAR_LMCUT else "GBFS"
        print(
            f"| {name} | {len(solved.plan)} ({planner}) | {h[0]:.1f} | {h[-1]:.1f} | {correlation:.3f} | {share:.2f} |",
            flush=True,
        )
    if correlations:
        mean = f"correlation {np.mean(correlations):.3f}, steps where h falls {np.mean(falling):.2f}"
        print(f"\nmean over the {len(correlations)} problems with a plan: {mean}")


if __name__ == "__main__":
    run_main(main)
