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
