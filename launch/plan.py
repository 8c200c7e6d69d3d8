"""Plan for one problem with a trained run and write an IPC plan file.

  python launch/plan.py --workdir=runs/blocks_wl_xgb_delta/seed13 \
      --domain=data/domains/blocks/domain.pddl --problem=p.pddl --out=plan.txt

Exit codes: 0 solved; 1 not solved within the horizon; 2 bad input (one `error:` line, checked before decoding).
"""

from absl import flags

from statecentric_jax.cli import run_main
from statecentric_jax.experiments.evaluation import plan_problem

_WORKDIR = flags.DEFINE_string("workdir", None, "A trained run (launch/train.py --workdir).")
_DOMAIN = flags.DEFINE_string("domain", None, "Domain PDDL file.")
_PROBLEM = flags.DEFINE_string("problem", None, "Problem PDDL file.")
_OUT = flags.DEFINE_string("out", "plan.txt", "Where the plan goes.")
_BEAM_WIDTH = flags.DEFINE_integer("beam_width", None, "Beam width (default: the run's config, 3).", lower_bound=1)
flags.mark_flags_as_required(["workdir", "domain", "problem"])


def main(argv):
    del argv
    result = plan_problem(_WORKDIR.value, _DOMAIN.value, _PROBLEM.value, _OUT.value, beam_width=_BEAM_WIDTH.value)
    print(f"solved {result.problem}: {len(result.plan)} actions, {result.seconds:.2f} s -> {_OUT.value}")


if __name__ == "__main__":
    run_main(main)
