"""Plan lengths of two experiments on the same problems, split by split (e.g. a setting on and off).

    python -m benchmarks.plan_lengths --before=runs/beyond/logistics_best --after=runs/x/logistics_best

Reads `<dir>/seed<N>/eval/<split>/results.json` of both (`launch/run_experiment.py` writes them) and
prints per split: problems solved by both, the mean plan length of each on those, and the mean of
the per-problem ratios after / before. Seeds are matched by name.
"""

import json
import pathlib

from absl import flags

from benchmarks.common import print_header
from statecentric_jax.cli import run_main
from statecentric_jax.errors import InputError

_BEFORE = flags.DEFINE_string("before", None, "An experiment directory (seed<N>/eval/...).", required=True)
_AFTER = flags.DEFINE_string("after", None, "Another one, on the same problems.", required=True)
_SPLITS = flags.DEFINE_list("splits", ["validation", "test-interpolation", "test-extrapolation"], "Splits.")


def solved_lengths(experiment: str, split: str) -> dict[tuple[str, str], int]:
    """(seed folder, problem file name) -> plan length of every solved problem of `split`."""
    files = sorted(pathlib.Path(experiment).glob(f"seed*/eval/{split}/results.json"))
    if not files:
        raise InputError(experiment, f"no seed*/eval/{split}/results.json here")
    lengths = {}
    for path in files:
        try:
            records = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise InputError(path, f"unreadable results ({type(e).__name__})") from None
        seed = path.parts[-4]
        # by file: problem names inside the PDDL files repeat
        lengths.update({(seed, pathlib.Path(r["problem_file"]).name): len(r["plan"]) for r in records if r["solved"]})
    return lengths


def main(argv):
    del argv
    print_header(["split", "solved by both", "mean length before", "after", "mean ratio after / before"])
    for split in _SPLITS.value:
        before, after = solved_lengths(_BEFORE.value, split), solved_lengths(_AFTER.value, split)
        both = sorted(before.keys() & after.keys())
        if not both:
            print(f"| {split} | 0 | - | - | - |")
            continue
        mean_before = sum(before[k] for k in both) / len(both)
        mean_after = sum(after[k] for k in both) / len(both)
        ratio = sum(after[k] / before[k] for k in both) / len(both)
        print(f"| {split} | {len(both)} | {mean_before:.1f} | {mean_after:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    run_main(main)
