"""Embedding dimension D per domain under several WL settings (and FSF), on training plans.

    python -m benchmarks.dimensions --pddl_root=<paper splits>

Solves the training split with Fast Downward (cached in --plans_dir), fits a WL
encoder per setting on the training trajectories, and prints D beside the paper's
two reported sets of WL dimensions. (FSF's D = N + 1 is printed by
launch/build_dataset.py.)
"""

from absl import flags

from benchmarks.common import print_header
from statecentric_jax.cli import run_main
from statecentric_jax.embedding.datasets import trajectories_path
from statecentric_jax.embedding.encoders import WLSettings, fit_encoder
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout, plan_generation

_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root.")
_PLANS_DIR = flags.DEFINE_string("plans_dir", "runs/bench/plans", "Where training plans are generated (cached).")

SETTINGS = {
    "k=2, multiset hash, states only (default)": WLSettings(),
    "k=2, multiset hash, states + goals": WLSettings(goals_in_vocabulary=True),
    "k=2, set hash": WLSettings(multiset_hash=False),
    "k=1, multiset hash": WLSettings(iterations=1),
    "k=3, multiset hash": WLSettings(iterations=3),
}
PAPER = {"paper, model-complexity table": (172, 302, 552, 138), "paper, WL appendix": (587, 412, 723, 498)}


def main(argv):
    del argv
    domains = layout.available_domains(_PDDL_ROOT.value)
    plan_generation.generate_plans(_PDDL_ROOT.value, _PLANS_DIR.value, domains=domains, splits=["train"])
    training = {}
    for domain in domains:
        domain_file = layout.domain_file(_PDDL_ROOT.value, domain)
        records = plan_generation.read_trajectories(trajectories_path(_PLANS_DIR.value, domain, "train"))
        training[domain] = [
            (load_task(domain_file, r["problem_file"]), [frozenset(s) for s in r["states"]]) for r in records
        ]
    print_header(["setting", *domains])
    for name, settings in SETTINGS.items():
        dims = [fit_encoder("wl", d, training[d], settings).dim for d in domains]
        print(f"| WL {name} | " + " | ".join(map(str, dims)) + " |")
    if domains == ["blocks", "gripper", "logistics", "visitall"]:
        for name, dims in PAPER.items():
            print(f"| {name} | " + " | ".join(map(str, dims)) + " |")


if __name__ == "__main__":
    run_main(main)
