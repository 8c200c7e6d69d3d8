"""What every benchmark prints first: the machine and the date, so figures can be placed; and its load.
Also the cost-to-go features the cost-to-go benchmarks read."""

import datetime
import os
import platform
import sys
from collections.abc import Sequence

import numpy as np

from statecentric_jax.embedding.encoders import Pair
from statecentric_jax.errors import InputError
from statecentric_jax.learning.train import LoadedModel


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    python = platform.python_version()
    return f"{platform.node()} | {cpu} | {os.cpu_count()} cores | Python {python} | {datetime.date.today()}"


def print_header(columns: Sequence[str] = ()) -> None:
    """The machine, the command line, and (given its columns) the header of the Markdown table that follows."""
    print(machine_line())
    print(f"command: {' '.join(sys.argv)}")
    if columns:
        print("| " + " | ".join(columns) + " |")
        print("|---" * len(columns) + "|")


def load_line() -> str:
    """The load averages over 1, 5 and 15 minutes, and the time: figures are only as good as that load."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} at {datetime.datetime.now():%H:%M:%S}"


def refuse_busy_machine(flag: str, max_per_core: float) -> None:
    """InputError when the 1-minute load average is above `max_per_core` x cores (0: no check)."""
    cores = os.cpu_count() or 1
    one = os.getloadavg()[0]
    if max_per_core > 0 and one > max_per_core * cores:
        raise InputError(
            flag,
            f"the 1-minute load average is {one:.2f}, above {max_per_core:g} per core x {cores} cores; "
            f"wait for a quiet machine, or pass {flag}=0 to measure anyway",
        )


def cost_to_go_features(
    run: LoadedModel, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None]
) -> np.ndarray:
    """The run's cost-to-go features of (task, state) pairs, embedded as decoding does (with their parents)."""
    assert run.cost_to_go is not None  # the benchmarks refuse a run without one
    embeddings = np.asarray(run.encoder.embed(pairs, parents), np.float32)
    return run.cost_to_go.embed(pairs, parents, embeddings)
