"""Plan for one problem with a trained run and write an IPC plan file.

  python launch/plan.py --workdir=runs/blocks_wl_xgb_delta/seed13 \
      --domain=data/domains/blocks/domain.pddl --problem=p.pddl --out=plan.txt

Exits non-zero with a one-line message if the problem is not solved within the horizon.
"""

import sys

from absl import flags

from statecentric_jax.cli import run_main
from statecentric_jax.experiments.evaluation import plan_problem
from statecentric_jax.search.base import EXPLORATIONS, STRATEGIES

_WORKDIR = flags.DEFINE_string("workdir", None, "A trained run (launch/train.py --workdir).")
_DOMAIN = flags.DEFINE_string("domain", None, "Domain PDDL file.")
_PROBLEM = flags.DEFINE_string("problem", None, "Problem PDDL file.")
_OUT = flags.DEFINE_string("out", "plan.txt", "Where the plan goes.")
_BEAM_WIDTH = flags.DEFINE_integer("beam_width", None, "Beam width (default: the run's config, 3).", lower_bound=1)
_STRATEGY = flags.DEFINE_enum(
    "strategy", None, list(STRATEGIES), "Search strategy (default: the run's config, the paper's beam)."
)
_BUDGET = flags.DEFINE_integer(
    "budget", None, "Node expansions per problem for strategies other than beam.", lower_bound=1
)
_EXPLORATION = flags.DEFINE_enum(
    "exploration", None, list(EXPLORATIONS), "Best-first with a cost-to-go: a second queue (default: the run's config)."
)
_GOAL_AGENDA = flags.DEFINE_integer(
    "goal_agenda",
    None,
    "Decode in stages with this many more goals each; 0: the whole goal (default: the run's).",
    lower_bound=0,
)
flags.mark_flags_as_required(["workdir", "domain", "problem"])


def main(argv):
    del argv
    result = plan_problem(
        _WORKDIR.value,
        _DOMAIN.value,
        _PROBLEM.value,
        _OUT.value,
        beam_width=_BEAM_WIDTH.value,
        strategy=_STRATEGY.value,
        budget=_BUDGET.value,
        exploration=_EXPLORATION.value,
        goal_agenda=_GOAL_AGENDA.value,
    )
    if not result.solved:
        print(f"not solved: {_PROBLEM.value}: {result.outcome} after {result.steps} steps", file=sys.stderr)
        return 1
    print(f"solved {result.problem}: {len(result.plan)} actions, {result.seconds:.2f} s -> {_OUT.value}")
    return 0


if __name__ == "__main__":
    run_main(main)
