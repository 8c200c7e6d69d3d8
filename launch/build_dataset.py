"""Embed the solved trajectories of each domain and encoding into cached arrays.

  python launch/build_dataset.py --pddl_root=data --plans_dir=runs/plans

Writes <out_dir>/<domain>/<encoding>/{encoder.json,<split>.npz}; a rerun only
redoes what changed (see statecentric_jax/embedding/datasets.py) and prints a table of
dimensions and unseen WL colours per split.
"""

import os

from absl import flags

from statecentric_jax.atomic import check_writable
from statecentric_jax.cli import run_main
from statecentric_jax.embedding.datasets import build_datasets
from statecentric_jax.embedding.encoders import KINDS

_PDDL_ROOT = flags.DEFINE_string(
    "pddl_root", "data", "data/ or a tree like the paper's splits: <domain>/domain.pddl, <domain>/<split>/*.pddl."
)
_PLANS_DIR = flags.DEFINE_string(
    "plans_dir", None, "--workdir of launch/generate_plans.py (<domain>/<split>/trajectories.jsonl).", required=True
)
_DOMAINS = flags.DEFINE_list("domains", None, "Domains (default: all under --pddl_root).")
_ENCODINGS = flags.DEFINE_list("encodings", list(KINDS), "Encodings: wl, fsf.")
_SPLITS = flags.DEFINE_list("splits", None, "Splits to embed (default: all with trajectories).")
_OUT_DIR = flags.DEFINE_string("out_dir", None, "Output root (default: runs/datasets/<name of --pddl_root>).")


def main(argv):
    del argv
    out_dir = _OUT_DIR.value or os.path.join("runs", "datasets", os.path.basename(os.path.abspath(_PDDL_ROOT.value)))
    check_writable(out_dir)
    lines = build_datasets(_PDDL_ROOT.value, _PLANS_DIR.value, out_dir, _DOMAINS.value, _ENCODINGS.value, _SPLITS.value)
    print("\n".join(lines))


if __name__ == "__main__":
    run_main(main)
