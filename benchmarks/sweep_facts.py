"""Figures about a finished sweep (docs/results.md): cost, reference-plan tiers, and plan identity with another sweep.

    python -m benchmarks.sweep_facts --sweep_dir=runs/paper-sweep-full \
        --fd_plans_dir=runs/paper-sweep-full/fd-test-plans --compare_dir=runs/paper-sweep

Prints the wall time and peak memory recorded in <sweep_dir>/sweep.json; per
domain and split of --fd_plans_dir, which Fast Downward configuration solved each
problem (the GBFS fallback gives non-optimal reference plans); and, with
--compare_dir, how many seed x split result files the two sweeps share and
whether their decoded plans are identical (a determinism check across runs).
"""

import collections
import json
import pathlib

from absl import flags

from benchmarks.common import machine_line
from statecentric_jax.cli import run_main
from statecentric_jax.experiments import sweep

_SWEEP_DIR = flags.DEFINE_string("sweep_dir", None, "A finished sweep.")
_FD_PLANS_DIR = flags.DEFINE_string(
    "fd_plans_dir", None, "generate_plans --workdir of the test splits' reference plans."
)
_COMPARE_DIR = flags.DEFINE_string(
    "compare_dir", None, "Another sweep of the same configurations, to compare plans with."
)
flags.mark_flags_as_required(["sweep_dir"])


def _plans(results_file: pathlib.Path) -> list:
    return [(r["problem"], r["plan"]) for r in json.loads(results_file.read_text(encoding="utf-8"))]


def main(argv):
    del argv
    print(machine_line())
    sweep_dir = pathlib.Path(_SWEEP_DIR.value)
    if (sweep_dir / sweep.SWEEP_FILE).is_file():  # absent for run_experiment folders side by side
        record = json.loads((sweep_dir / sweep.SWEEP_FILE).read_text(encoding="utf-8"))
        print(
            f"sweep: {record['total_wall_seconds']:.0f} s wall over {len(record['invocations'])} invocation(s); "
            f"peak child memory per invocation (MiB): {[i.get('peak_rss_mb_children') for i in record['invocations']]}"
        )
    if _FD_PLANS_DIR.value:
        for split_dir in sorted(pathlib.Path(_FD_PLANS_DIR.value).glob("*/*/records")):
            tiers = collections.Counter(
                json.loads(f.read_text(encoding="utf-8")).get("config") for f in split_dir.glob("*.json")
            )
            print(
                f"reference plans {split_dir.parent.parent.name}/{split_dir.parent.name}: "
                + ", ".join(f"{config} {n}" for config, n in sorted(tiers.items(), key=str))
            )
    if _COMPARE_DIR.value:
        shared = identical = 0
        for mine in sorted(sweep_dir.glob("*/seed*/eval/*/results.json")):
            theirs = pathlib.Path(_COMPARE_DIR.value) / mine.relative_to(sweep_dir)
            if theirs.is_file():
                shared += 1
                identical += _plans(mine) == _plans(theirs)
        print(f"result files in both sweeps: {shared}; with identical plans: {identical}")


if __name__ == "__main__":
    run_main(main)
