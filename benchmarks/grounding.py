"""Grounding time and memory: `load_task` (Fast Downward's translator as a library, relaxed
reachability) against pyperplan's grounding of every statically allowed action and against Fast
Downward's whole translator (`fast-downward.py --translate`: parsing, grounding, invariants, SAS).

    python -m benchmarks.grounding --root=<IPC-layout folder> \\
        --problems=sokoban/medium/p01,rovers/hard/p01 --old_time_limit=60
    python -m benchmarks.grounding --paper_root=data
    python -m benchmarks.grounding --instantiation=<domain.pddl>:<problem.pddl>,...

With `--problems` (pNN of `<root>/<domain>/testing/<level>/`), each grounding runs in a process
of its own, one after another on the same problem, under `--memory_limit_mb` (address space):
seconds are the wall-clock time of `load_task` in that process (ours, old) and of the translator's
whole process (FD); peak MB is the process's peak resident memory. The old grounding is given up
after `--old_time_limit` seconds (0: not run).

With `--paper_root` (a paper-splits-like tree), every problem of every split is loaded in this
process by the new and the old `load_task`, alternately, and the totals per domain are compared.

With `--instantiation`, `load_task` as it is (ours) and with the translator's own instantiation of
the same reachability model (`reference_grounding.translator_grounded`) run alternately, twice
each, in fresh processes; a digest of each task tells whether they are the same.
"""

import json
import os
import pathlib
import resource
import signal
import subprocess
import sys
import tempfile
import time

from absl import flags

from benchmarks.common import load_line, print_columns, print_header
from statecentric_jax.cli import run_main
from statecentric_jax.errors import InputError
from statecentric_jax.planning.reference_grounding import ground_all
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout
from statecentric_jax.problems.fast_downward import driver_path

ROOT = flags.DEFINE_string("root", "", "A folder in IPC layout: <domain>/domain.pddl, <domain>/testing/<level>/.")
PROBLEMS = flags.DEFINE_list("problems", [], "Problems as domain/level/pNN, e.g. sokoban/medium/p01.")
OLD_TIME_LIMIT = flags.DEFINE_float("old_time_limit", 60, "Seconds before the old grounding is given up (0: skip).")
TIME_LIMIT = flags.DEFINE_float("time_limit", 1800, "Seconds before ours or Fast Downward's translator is given up.")
MEMORY_LIMIT_MB = flags.DEFINE_integer("memory_limit_mb", 8192, "Address-space limit of every grounding process.")
PAPER_ROOT = flags.DEFINE_string("paper_root", "", "A paper-splits-like tree: time load_task new against old.")
INSTANTIATION = flags.DEFINE_list(
    "instantiation", [], "domain.pddl:problem.pddl pairs: ours against the translator's own instantiation."
)

# Run in a fresh interpreter: load the task with the named grounding, print its seconds and operators.
_MEASURE = """
import hashlib, json, sys, time
from statecentric_jax.planning.reference_grounding import ground_all, translator_grounded
from statecentric_jax.planning.tasks import ground_reachable, load_task
grounder = {"ours": ground_reachable, "old": ground_all, "translator": translator_grounded}[sys.argv[1]]
start = time.perf_counter()
task = load_task(sys.argv[2], sys.argv[3], grounder=grounder)
seconds = time.perf_counter() - start
parts = [(op.name, *map(sorted, (op.pre, op.pre_neg, op.add, op.delete))) for op in task.operators]
parts += [sorted(task.init), sorted(task.static), sorted(task.goal)]
digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:16]
print(json.dumps({"seconds": seconds, "operators": len(task.operators), "digest": digest}))
"""


TRANSLATOR_OUT_OF_MEMORY = 20  # the driver's exit code (driver/returncodes.py)

# Run a command as the child of a fresh, small interpreter and write its peak resident memory (KiB) to a
# file: a child forked from this process would count this process's memory as its own peak.
_PEAK = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_limited(command: list[str], time_limit: float, cwd: str) -> tuple[str, float, float, str]:
    """(outcome, wall seconds, peak MB, output) of a process run under the time and memory limits;
    outcome is 'ok', 'timeout' or 'failed (...)'. The peak covers the process and its children."""
    limit = MEMORY_LIMIT_MB.value * 1024 * 1024

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with tempfile.TemporaryDirectory(prefix="peak-") as tmp:
        peak_file = os.path.join(tmp, "peak")
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", _PEAK, peak_file, *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=limit_memory,
        )
        try:
            text, _ = proc.communicate(timeout=time_limit)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            text, _ = proc.communicate()
            timed_out = True
        seconds = time.perf_counter() - start
        peak_mb = int(pathlib.Path(peak_file).read_text()) / 1024 if os.path.exists(peak_file) else float("nan")
    if timed_out:
        return "timeout", seconds, peak_mb, text
    if proc.returncode != 0:
        memory = "MemoryError" in text or proc.returncode == TRANSLATOR_OUT_OF_MEMORY
        last = (text.strip().splitlines() or ["no output"])[-1][:60]
        return f"failed ({'out of memory' if memory else last})", seconds, peak_mb, text
    return "ok", seconds, peak_mb, text


def measure_load(which: str, domain_file: str, problem_file: str, time_limit: float) -> tuple[str, float, int | None]:
    """(outcome or seconds as text, peak MB, operators) of load_task with one grounding in a fresh process."""
    outcome, peak_mb, result = measured_load(which, domain_file, problem_file, time_limit)
    return (f"{result['seconds']:.2f}", peak_mb, result["operators"]) if result else (outcome, peak_mb, None)


def measured_load(which: str, domain_file: str, problem_file: str, time_limit: float) -> tuple[str, float, dict]:
    """(outcome, peak MB, _MEASURE's result or {}) of load_task with one grounding in a fresh process."""
    command = [sys.executable, "-c", _MEASURE, which, domain_file, problem_file]
    outcome, _, peak_mb, text = run_limited(command, time_limit, cwd=os.getcwd())
    return outcome, peak_mb, json.loads(text.strip().splitlines()[-1]) if outcome == "ok" else {}


def measure_translator(domain_file: str, problem_file: str) -> tuple[str, float]:
    """(wall seconds as text or the outcome, peak MB) of Fast Downward's whole translator."""
    with tempfile.TemporaryDirectory(prefix="translate-") as tmp:
        command = [sys.executable, driver_path(), "--translate", "--sas-file", os.path.join(tmp, "output.sas")]
        outcome, seconds, peak_mb, _ = run_limited([*command, domain_file, problem_file], TIME_LIMIT.value, cwd=tmp)
    return (f"{seconds:.2f}" if outcome == "ok" else outcome), peak_mb


def parse_problem(spec: str) -> tuple[str, str]:
    parts = spec.split("/")
    if len(parts) != 3:
        raise InputError("--problems", f"'{spec}' is not domain/level/pNN")
    domain, level, name = parts
    domain_file = os.path.join(ROOT.value, domain, "domain.pddl")
    problem_file = os.path.join(ROOT.value, domain, "testing", level, name + ".pddl")
    for path in (domain_file, problem_file):
        if not os.path.isfile(path):
            raise InputError("--problems", f"{path} not found")
    return domain_file, problem_file


def megabytes(peak_mb: float) -> str:
    return "-" if peak_mb != peak_mb else f"{peak_mb:.0f}"  # NaN: no peak (killed)


def ratio(a: str, b: str) -> str:
    try:
        return f"{float(a) / float(b):.2f}"
    except ValueError:
        return "-"


def compare_problems() -> None:
    if not ROOT.value:
        raise InputError("--root", "give the IPC-layout folder that --problems are in")
    files = [parse_problem(spec) for spec in PROBLEMS.value]  # all checked before the first is timed
    print_header()
    print(f"limits: {MEMORY_LIMIT_MB.value} MB address space; old grounding {OLD_TIME_LIMIT.value:g} s")
    columns = "problem, ground ops, ours s, ours MB, old s, old MB, old ops, FD translate s, FD MB, ours / FD"
    print_columns(columns.split(", "))
    for spec, (domain_file, problem_file) in zip(PROBLEMS.value, files):
        ours, ours_mb, operators = measure_load("ours", domain_file, problem_file, TIME_LIMIT.value)
        if OLD_TIME_LIMIT.value > 0:
            old, old_mb, old_operators = measure_load("old", domain_file, problem_file, OLD_TIME_LIMIT.value)
            old_columns = [old, megabytes(old_mb), str(old_operators or "-")]
        else:
            old_columns = ["not run", "-", "-"]
        fd, fd_mb = measure_translator(domain_file, problem_file)
        row = [spec, str(operators or "-"), ours, megabytes(ours_mb), *old_columns, fd, megabytes(fd_mb)]
        row.append(ratio(ours, fd))
        print("| " + " | ".join(row) + " |", flush=True)
    print(load_line())


def compare_paper() -> None:
    columns = "domain, problems, new load_task s, old load_task s, old / new, identical tasks, operators as old"
    print_header(columns.split(", "))
    for index, domain in enumerate(layout.available_domains(PAPER_ROOT.value)):
        domain_file = layout.domain_file(PAPER_ROOT.value, domain)
        splits = sorted(p.name for p in layout.domain_dir(PAPER_ROOT.value, domain).iterdir() if p.is_dir())
        problems = [p for split in splits for p in layout.problem_files(PAPER_ROOT.value, domain, split)]
        if index == 0:  # untimed: the translator's modules are imported on the first call, pyperplan's already
            load_task(domain_file, problems[0])
        new_seconds = old_seconds = 0.0
        identical = same = 0
        for problem in problems:
            start = time.perf_counter()
            new = load_task(domain_file, problem)
            middle = time.perf_counter()
            old = load_task(domain_file, problem, grounder=ground_all)
            old_seconds += time.perf_counter() - middle
            new_seconds += middle - start
            old_operators = {op.name: op for op in old.operators}
            identical += new == old
            same += all(old_operators.get(op.name) == op for op in new.operators)
        print(
            f"| {domain} | {len(problems)} | {new_seconds:.2f} | {old_seconds:.2f} "
            f"| {old_seconds / new_seconds:.2f} | {identical} | {same} |",
            flush=True,
        )
    print(load_line())


def compare_instantiation() -> None:
    pairs = [spec.rsplit(":", 1) for spec in INSTANTIATION.value]
    for spec, pair in zip(INSTANTIATION.value, pairs):  # all checked before the first is timed
        if len(pair) != 2 or not all(os.path.isfile(path) for path in pair):
            raise InputError("--instantiation", f"'{spec}' is not <domain.pddl>:<problem.pddl> of two files")
    columns = "problem, ground ops, ours s, translator's s, ours MB, translator's MB, translator's / ours, same task"
    print_header(columns.split(", "))
    for domain_file, problem_file in pairs:
        runs: dict[str, list[tuple[str, float, dict]]] = {"ours": [], "translator": []}
        for _ in range(2):
            for which in runs:
                runs[which].append(measured_load(which, domain_file, problem_file, TIME_LIMIT.value))
        results = [result for done in runs.values() for _, _, result in done]
        if not all(results):
            outcomes = {which: [outcome for outcome, _, _ in done] for which, done in runs.items()}
            print(f"| {problem_file} | {outcomes} |", flush=True)
            continue
        seconds = {which: [result["seconds"] for _, _, result in done] for which, done in runs.items()}
        peaks = {which: max(peak for _, peak, _ in done) for which, done in runs.items()}
        same = len({result["digest"] for result in results}) == 1
        row = [problem_file, str(results[0]["operators"])]
        row += [" / ".join(f"{s:.2f}" for s in seconds[which]) for which in runs]
        row += [megabytes(peaks[which]) for which in runs]
        row += [f"{sum(seconds['translator']) / sum(seconds['ours']):.2f}", "yes" if same else "NO"]
        print("| " + " | ".join(row) + " |", flush=True)
    print(load_line())


def main(argv):
    del argv
    if PAPER_ROOT.value:
        compare_paper()
    if PROBLEMS.value:
        compare_problems()
    if INSTANTIATION.value:
        compare_instantiation()
    if not (PAPER_ROOT.value or PROBLEMS.value or INSTANTIATION.value):
        raise InputError("--problems", "give --problems (with --root), --paper_root or --instantiation")


if __name__ == "__main__":
    run_main(main)
