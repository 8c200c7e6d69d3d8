"""Estimated wall time of a Ray sweep on N machines, from the per-task seconds a Ray sweep records.

    python launch/sweep.py --sweep_dir=runs/scaleout/ray --backend=ray --configs=... --seeds=13,14
    python -m benchmarks.scaleout --sweep_dir=runs/scaleout/ray --cores_per_machine=2 --machines=1,2,4,8,16

Reads `task_seconds` ("<config>/<seed>" -> seconds) of every invocation in <sweep_dir>/sweep.json
and schedules the tasks longest-first onto machines x cores slots, one CPU per task as the sweep
requests (list scheduling, within 4/3 of the optimum). The estimate leaves out data preparation
(once per domain, before the tasks), Ray start-up and shared-filesystem contention; the measured
overhead on one machine is wall_seconds minus the estimate for that machine.
"""

import heapq
import json
import pathlib

from absl import app, flags

from benchmarks.common import machine_line
from statecentric_jax.cli import run_main
from statecentric_jax.experiments import sweep

_SWEEP_DIR = flags.DEFINE_string("sweep_dir", None, "A sweep run with --backend=ray.")
_CORES = flags.DEFINE_integer("cores_per_machine", 2, "Task slots per machine (one CPU per task).")
_MACHINES = flags.DEFINE_list("machines", ["1", "2", "4", "8", "16", "32"], "Machine counts to estimate.")
flags.mark_flags_as_required(["sweep_dir"])


def makespan(seconds: list[float], slots: int) -> float:
    """Longest-processing-time-first list schedule of the tasks on `slots` identical slots."""
    loads = [0.0] * slots
    for task in sorted(seconds, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + task)
    return max(loads)


def main(argv):
    del argv
    print(machine_line())
    record = json.loads((pathlib.Path(_SWEEP_DIR.value) / sweep.SWEEP_FILE).read_text(encoding="utf-8"))
    tasks = {k: v for inv in record["invocations"] for k, v in inv.get("task_seconds", {}).items()}
    if not tasks:
        raise app.UsageError(f"{_SWEEP_DIR.value}: no task_seconds; run the sweep with --backend=ray")
    seconds = list(tasks.values())
    print(
        f"{len(seconds)} tasks, {sum(seconds):.0f} task-seconds, longest {max(seconds):.0f} s;"
        f" recorded wall {record['total_wall_seconds']:.0f} s"
    )
    print("| machines | cores | estimated wall (s) | speed-up vs 1 machine |")
    print("|---|---|---|---|")
    one = makespan(seconds, _CORES.value)
    for machines in (int(m) for m in _MACHINES.value):
        wall = makespan(seconds, machines * _CORES.value)
        print(f"| {machines} | {machines * _CORES.value} | {wall:.0f} | {one / wall:.2f} |")


if __name__ == "__main__":
    run_main(main)
