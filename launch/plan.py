"""Plan for one problem with a trained run and write an IPC plan file.

  python launch/plan.py --workdir=runs/blocks_wl_xgb_delta/seed13 \
      --domain=data/domains/blocks/domain.pddl --problem=p.pddl --out=plan.txt

Exits non-zero with a one-line message if the problem is not solved within the horizon.
"""

import sys

from absl import flags

from statecentric_jax.cli import define_decode_flags, run_main
from statecentric_jax.method.evaluation import plan_problem

_WORKDIR = flags.DEFINE_string("workdir", None, "A trained run (launch/train.py --workdir).")
_DOMAIN = flags.DEFINE_string("domain", None, "Domain PDDL file.")
_PROBLEM = flags.DEFINE_string("problem", None, "Problem PDDL file.")
_OUT = flags.DEFINE_string("out", "plan.txt", "Where the plan goes.")
_DECODE_SETTINGS = define_decode_flags()
flags.mark_flags_as_required(["workdir", "domain", "problem"])


def main(argv):
    del argv
    result = plan_problem(_WORKDIR.value, _DOMAIN.value, _PROBLEM.value, _OUT.value, **_DECODE_SETTINGS())
    if not result.solved:
        print(f"not solved: {_PROBLEM.value}: {result.outcome} after {result.steps} steps", file=sys.stderr)
        return 1
    print(f"solved {result.problem}: {len(result.plan)} actions, {result.seconds:.2f} s -> {_OUT.value}")
    return 0


if __name__ == "__main__":
    run_main(main)
