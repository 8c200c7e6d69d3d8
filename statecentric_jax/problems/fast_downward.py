"""Solve one PDDL problem with Fast Downward, falling back to cheaper searches.

Fast Downward comes from the `up-fast-downward` wheel, which ships the planner
binary and its `fast-downward.py` driver. The driver runs in a subprocess (one
temporary directory per run), so a crash or a runaway search never takes this
process down. Each configuration has a wall-clock limit, enforced here by
killing the planner's process group; the same limit (rounded up) is handed to
the driver as a CPU limit, so a planner orphaned by a killed parent still stops.

The problem is loaded with `load_task` first: bad input is reported in one line
and the planner never sees it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence

from statecentric_jax.errors import InputError
from statecentric_jax.planning.plans import read_plan
from statecentric_jax.planning.tasks import load_task

ASTAR_LMCUT = "astar(lmcut())"
GBFS_FF = "eager_greedy([ff()])"
# Fast Downward's `lama-first` alias (driver/aliases.py of the wheel): LAMA's first, greedy iteration,
# with preferred operators; much stronger than GBFS_FF on large problems, for reference plans.
LAMA_FIRST = (
    "let(hlm, eval_modify_costs(landmark_sum(lm_factory=lm_reasonable_orders_hps(lm_rhw()),pref=false),cost_type=one),"
    "let(hff, eval_modify_costs(ff(),cost_type=one),"
    "lazy_greedy([hff,hlm],preferred=[hff,hlm],cost_type=one,reopen_closed=false)))"
)
FALLBACKS = {"gbfs_ff": GBFS_FF, "lama_first": LAMA_FIRST}  # the second tier, after A* with LM-cut
STATUSES = ("solved", "timeout", "unsolvable", "error")

# Driver exit codes (driver/returncodes.py in the wheel).
_PLAN_FOUND = {0, 1, 2, 3}  # 1-3: a plan was found, then a limit was hit
_UNSOLVABLE = {10: "the translator proved the problem unsolvable", 11: "the search proved the problem unsolvable"}
_OUT_OF_RESOURCES = {
    12: "the search ended without a plan (incomplete search)",
    20: "the translator ran out of memory",
    21: "the translator ran out of time",
    22: "the search ran out of memory",
    23: "the search ran out of time",
    24: "the search ran out of memory and time",
    256 - signal.SIGXCPU: "a component hit the CPU-time limit (SIGXCPU)",  # the driver reports -24 as 232
}


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """One planner configuration: a Fast Downward `--search` string and its wall-clock limit."""

    search: str
    time_limit: float  # seconds


def default_configs(
    astar_time_limit: float = 60, gbfs_time_limit: float = 300, fallback: str = "gbfs_ff"
) -> tuple[SearchConfig, ...]:
    """The paper's two tiers: optimal A* with LM-cut, then greedy best-first search with FF
    (`fallback="lama_first"`: LAMA's first iteration instead, for plans of large problems)."""
    if fallback not in FALLBACKS:
        raise InputError(None, f"unknown planner fallback '{fallback}' (use {' or '.join(FALLBACKS)})")
    return SearchConfig(ASTAR_LMCUT, astar_time_limit), SearchConfig(FALLBACKS[fallback], gbfs_time_limit)


@dataclasses.dataclass(frozen=True)
class Attempt:
    """What one configuration did (kept in the manifest to show when the fallback ran)."""

    config: str
    status: str
    seconds: float
    reason: str  # '' when solved


@dataclasses.dataclass(frozen=True)
class SolveResult:
    """The outcome for one problem. `message` is one line naming the file ('' when solved)."""

    status: str  # one of STATUSES
    config: str | None  # the search that found the plan
    plan: list[str] | None
    seconds: float  # all attempts together
    message: str
    attempts: tuple[Attempt, ...] = ()


def driver_path() -> str:
    """`fast-downward.py` inside the installed wheel, found without importing the package
    (importing it needs unified_planning)."""
    spec = importlib.util.find_spec("up_fast_downward")
    if spec is None or not spec.submodule_search_locations:
        raise InputError(None, "Fast Downward not found: install the 'up-fast-downward' package")
    path = os.path.join(next(iter(spec.submodule_search_locations)), "downward", "fast-downward.py")
    if not os.path.isfile(path):
        raise InputError(path, "Fast Downward driver missing from the 'up-fast-downward' package")
    return path


_running: set[subprocess.Popen] = set()
_running_lock = threading.Lock()


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the planner it started


def kill_running() -> None:
    """Kill every planner still running (on Ctrl-C, planners run in worker threads)."""
    with _running_lock:
        for proc in _running:
            _kill(proc)


def _run(command: list[str], cwd: str, time_limit: float) -> tuple[int | None, str, str]:
    """Run the planner in its own process group; returncode None means the wall-clock
    limit killed it."""
    proc = subprocess.Popen(
        command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    with _running_lock:
        _running.add(proc)
    try:
        stdout, stderr = proc.communicate(timeout=time_limit)
        return proc.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        _kill(proc)
        stdout, stderr = proc.communicate()
        return None, stdout, stderr
    except BaseException:  # e.g. Ctrl-C in the calling thread
        _kill(proc)
        proc.wait()
        raise
    finally:
        with _running_lock:
            _running.discard(proc)


def _error_line(stderr: str, stdout: str) -> str:
    """The planner's own reason: its `Error:`/`Reason:` lines if it printed any, else its last line."""
    lines = [line.strip() for text in (stderr, stdout) for line in text.splitlines() if line.strip()]
    quoted = [line for line in lines if line.lower().startswith(("error", "reason", "critical")) or "Error:" in line]
    text = " ".join(quoted[-2:]) if quoted else (lines[-1] if lines else "no output")
    return text if len(text) <= 200 else text[:197] + "..."


def attempt(
    domain_file: str, problem_file: str, config: SearchConfig, memory_limit_mb: int
) -> tuple[Attempt, list[str] | None, str]:
    """One configuration on one problem: what it did, its plan (None without one) and the planner's log."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fast-downward-") as tmp:
        plan_file = os.path.join(tmp, "plan")
        command = [
            sys.executable,
            driver_path(),
            "--overall-time-limit",
            f"{max(1, math.ceil(config.time_limit))}s",
            "--overall-memory-limit",
            f"{memory_limit_mb}M",
            "--plan-file",
            plan_file,
            "--sas-file",
            os.path.join(tmp, "output.sas"),
            domain_file,
            problem_file,
            "--search",
            config.search,
        ]
        code, stdout, stderr = _run(command, tmp, config.time_limit)
        seconds = time.monotonic() - start
        plan = None
        if code is None:
            status, reason = "timeout", f"no plan within {config.time_limit:g} s"
        elif code in _PLAN_FOUND and os.path.isfile(plan_file):
            status, reason, plan = "solved", "", read_plan(plan_file)
        elif code in _UNSOLVABLE:
            status, reason = "unsolvable", _UNSOLVABLE[code]
        elif code in _OUT_OF_RESOURCES:
            status, reason = "timeout", _OUT_OF_RESOURCES[code]
        else:
            status, reason = "error", f"Fast Downward failed (exit code {code}): {_error_line(stderr, stdout)}"
    return Attempt(config.search, status, round(seconds, 3), reason), plan, stdout


def solve(
    domain_file: str | os.PathLike,
    problem_file: str | os.PathLike,
    configs: Sequence[SearchConfig] = default_configs(),
    memory_limit_mb: int = 4096,
) -> SolveResult:
    """Try `configs` in order until one finds a plan or proves there is none.

    Running out of time or memory moves on to the next configuration; an
    unsolvability proof or a planner error ends the search. Never raises on bad
    input: that is a result with status "error" and the one-line reason.
    """
    if not configs:
        raise ValueError("solve() needs at least one search configuration")
    domain_file, problem_file = os.path.abspath(domain_file), os.path.abspath(problem_file)
    try:
        load_task(domain_file, problem_file)
    except InputError as e:
        return SolveResult("error", None, None, 0.0, str(e))
    attempts = []
    for config in configs:
        tried, plan, _ = attempt(domain_file, problem_file, config, memory_limit_mb)
        attempts.append(tried)
        if tried.status != "timeout":
            break
    seconds = round(sum(a.seconds for a in attempts), 3)
    last = attempts[-1]
    if last.status == "solved":
        return SolveResult("solved", last.config, plan, seconds, "", tuple(attempts))
    message = f"{problem_file}: " + "; ".join(f"{a.config}: {a.reason}" for a in attempts)
    return SolveResult(last.status, None, None, seconds, message, tuple(attempts))
