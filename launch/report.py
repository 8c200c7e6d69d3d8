"""Table 1, plots and plan quality of a sweep, beside the paper's published numbers.

  python launch/report.py --sweep_dir=runs/sweep

Writes table1, plan_quality and failures (.md and .csv) for the paper's method,
beyond_paper and beyond_quality (.md and .csv) for runs that add to it, and
success_by_split.png and success_vs_size.png, into --out_dir (default
<sweep_dir>/report); the same runs always give identical files.
"""

import os

from absl import flags

from statecentric_jax.atomic import check_writable
from statecentric_jax.cli import run_main
from statecentric_jax.experiments import report

_SWEEP_DIR = flags.DEFINE_string("sweep_dir", None, "The sweep's run directories, one per configuration.")
_OUT_DIR = flags.DEFINE_string("out_dir", None, "Where the report goes (default: <sweep_dir>/report).")
_PAPER_CSV = flags.DEFINE_string(
    "paper_csv", str(report.PAPER_CSV), "The paper's Table 1 (domain,split,system,variant,mean,std)."
)
_FD_PLANS_DIR = flags.DEFINE_string(
    "fd_plans_dir",
    None,
    "More Fast Downward plans (generate_plans --workdir), <dir>/<domain>/<split>/trajectories.jsonl;"
    " splits not there come from each run's plans cache.",
)
flags.mark_flags_as_required(["sweep_dir"])


def main(argv):
    del argv
    check_writable(_OUT_DIR.value or os.path.join(_SWEEP_DIR.value, "report"))
    files = report.write_report(_SWEEP_DIR.value, _OUT_DIR.value, _PAPER_CSV.value, _FD_PLANS_DIR.value)
    print(files[0].read_text(encoding="utf-8"))
    print("wrote " + ", ".join(str(f) for f in files))


if __name__ == "__main__":
    run_main(main)
