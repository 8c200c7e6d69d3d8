"""What every benchmark prints first: the machine and the date, so figures can be placed."""

import datetime
import os
import platform


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    python = platform.python_version()
    return f"{platform.node()} | {cpu} | {os.cpu_count()} cores | Python {python} | {datetime.date.today()}"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: timings taken while other jobs ran are not comparable."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
