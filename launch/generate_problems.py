"""Generate the project's PDDL problem sets (the paper's dataset sizes), e.g.

  python launch/generate_problems.py --out_root=data --domains=blocks,gripper --seed=0

writes `<out_root>/domains/<domain>/{domain.pddl,<split>/*.pddl}`; same seed, same files.
"""

from absl import app, flags, logging

from statecentric_jax import cli
from statecentric_jax.atomic import check_writable
from statecentric_jax.problems import generators, layout

_OUT_ROOT = flags.DEFINE_string("out_root", "data", "PDDL root to write (domains/<domain>/<split>/*.pddl).")
_DOMAINS = flags.DEFINE_list("domains", list(layout.DOMAINS), "Domains to generate.")
_SPLITS = flags.DEFINE_list("splits", list(layout.SPLITS), "Splits to generate.")
_SEED = flags.DEFINE_integer("seed", 0, "Random seed.")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments.")
    check_writable(_OUT_ROOT.value)
    written = generators.write_dataset(_OUT_ROOT.value, _DOMAINS.value, _SPLITS.value, _SEED.value)
    logging.info("wrote %d problems under %s", len(written), _OUT_ROOT.value)


if __name__ == "__main__":
    cli.run_main(main)
