"""Side by side on a benchmark in IPC layout: our planner and Fast Downward's baselines, every test problem in a
process of its own under the same wall-clock and memory limits, every plan re-checked.

Input (`root`): `<domain>/domain.pddl`, `<domain>/training/easy/*.pddl`, `<domain>/testing/<level>/*.pddl` and,
optionally, `reference_costs.json` (best known cost per `<domain>/testing/<level>/<pNN>.pddl`).

Output, all under `workdir`:

  records.jsonl                       one line per finished (planner, problem), appended as each finishes
  results.csv                         planner, domain, level, problem, solved, plan_cost, reference_cost, seconds,
                                      expansions, peak_mb, outcome (regenerated from the records)
  coverage.md, quality.md, cumulative.png                                   (regenerated from the records)
  <planner>/<domain>/run/             our planner trained for the domain, from its training problems only
  <planner>/<domain>/planner.json     what it was trained for (a rerun reuses the run; the same config with
                                      another selection menu chooses again, reusing the candidates); with a
                                      `selection` section also selection.json, selection/ (method/selection.py)
  <planner>/<domain>/training.log     the last training's output (training runs in a process of its own under the
                                      training limits); training.json: its wall seconds and peak resident MiB
  cache/                              expert plans, datasets, training views (method/pipeline.py)
  <planner>/<domain>/<level>/<pNN>.plan                                     every valid plan, IPC format

Resuming: a record carries a fingerprint of the planner (a Fast Downward search's settings; for ours, the files of
its trained run, so that a run that selection chooses alike under another menu keeps its records), the domain and
problem files and the limits; a rerun skips every (planner, problem) with a matching record and plans the rest
(`--replan` names planners to plan again all the same, after a change to their code: their selected records are
marked `retry` first, so a run interrupted while replanning resumes without the flag). Records of other
selections and limits stay in records.jsonl; the tables show the current selection (the plan files, one per
(planner, problem), the latest run's: one workdir per set of limits). Errors around the
planning are retried: our planner's training failed, a planner was killed by a signal not ours (the system's OOM
killer), or a plan could not be re-checked (a feature the replay does
not support yet). A killed run loses at most the problems in flight.

Limits: the parent process measures each planner's wall clock and its process tree's resident memory (psutil,
every 50 ms) and kills the tree at either limit (outcomes `timeout`, `memory`). The clock of Fast Downward starts
when its driver starts; ours when the process has loaded the trained model and starts reading the problem
(`startup_seconds` records the loading). No RLIMIT_AS: address-space limits count reservations, not use. Our
search runs until it solves the problem or reaches a limit: the run's node budget (`decode.budget`, which
selection and `evaluate` use) does not apply here, as Fast Downward's searches have none.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import csv
import dataclasses
import hashlib
import io
import json
import math
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import ml_collections
import psutil
from absl import flags, logging

from statecentric_jax.atomic import exclusive_lock, open_for_append, read_own_json, replace_atomically, write_text
from statecentric_jax.errors import InputError
from statecentric_jax.problems import fast_downward

REPO = pathlib.Path(__file__).resolve().parents[2]
RECOMMENDED = "recommended"
FAST_DOWNWARD = {"lama_first": fast_downward.LAMA_FIRST, "gbfs_ff": fast_downward.GBFS_FF}
DEFAULT_LEVELS = ("easy", "medium", "hard")
OUTCOMES = ("solved", "unsolved", "timeout", "memory", "invalid", "error")
RESULT_FIELDS = (
    "planner",
    "domain",
    "level",
    "problem",
    "solved",
    "plan_cost",
    "reference_cost",
    "seconds",
    "expansions",
    "peak_mb",
    "outcome",
)
TESTING = "testing"  # a domain's test problems, one folder per level
RECORDS_FILE = "records.jsonl"
TRAINED_FILE = "planner.json"  # beside a domain's trained run: the identity of the planner it was trained for
TRAINING_FILE = "training.json"  # beside it: wall seconds and peak resident MiB of the last training
TRAINING_LOG = "training.log"
TRAINING_LIMITS = (24 * 3600.0, 32768)  # the competition's limits for learning, per domain: 24 h, 32 GiB
REFERENCE_FILE = "reference_costs.json"
POLL_S = 0.05
GRACE_S = 10.0  # past the time limit before a kill: a search that stops itself reports its expansions; a plan
# found after the limit counts as a timeout all the same (`solve_one`)
SEARCH_MEMORY_SHARE = 0.95  # of the memory limit, where our search stops itself (reporting its expansions) before
# the kill at the limit; memory grows between its checks
_DECODE_OUTCOMES = {"timeout": "timeout", "memory": "memory"}  # our search's own limits; the rest: unsolved
STARTUP_LIMIT_S = 600.0  # loading a trained model; longer is an error, not a timeout of the search
CHECK_LIMIT_S = 1800.0  # re-checking one plan (replay grounds the problem)


@dataclasses.dataclass(frozen=True)
class Problem:
    """One test problem; `key` is its path below the root, as in reference_costs.json."""

    domain: str
    level: str
    name: str
    path: pathlib.Path

    @property
    def domain_file(self) -> pathlib.Path:
        return self.path.parents[2] / "domain.pddl"

    @property
    def key(self) -> str:
        return f"{self.domain}/{TESTING}/{self.level}/{self.path.name}"


@dataclasses.dataclass(frozen=True)
class Planner:
    """A Fast Downward search (`search`) or our planner with a config file (`config`)."""

    name: str
    search: str | None = None
    config: ml_collections.ConfigDict | None = dataclasses.field(default=None, compare=False)
    source: str = ""  # as given to `resolve_planners`: how a child process gets the same planner

    @property
    def identity(self) -> str:
        """What the planner's results depend on, besides the problem and the limits."""
        if self.search is not None:
            return f"fast-downward {self.search}"
        assert self.config is not None
        settings = json.loads(self.config.to_json_best_effort())
        for where in ("pddl_root", "cache_dir", "jobs", "domain"):  # set per domain and run, or no effect
            settings["data"].pop(where, None)
        return json.dumps(settings, sort_keys=True)


@dataclasses.dataclass(frozen=True)
class Limits:
    time_limit: float  # seconds of planning, wall clock
    memory_limit_mb: int


# ---------------------------------------------------------------- selection (all checked before any work)


def problem_filter(spec: str) -> Callable[[str], bool]:
    """`--problems`: `all`, `every=K` (p01, p(1+K), ...) or names `p01,p02`; a test of a problem's name."""
    spec = spec.strip()
    if spec == "all":
        return lambda name: True
    every = re.fullmatch(r"every=(\d+)", spec)
    if every:
        k = int(every[1])
        if k < 1:
            raise InputError("--problems", f"every=K needs K >= 1, got {spec}")
        return lambda name: (number := _number(name)) is not None and (number - 1) % k == 0
    names = [n.strip() for n in spec.split(",")]
    if not names or not all(re.fullmatch(r"p\d+", n) for n in names):
        raise InputError("--problems", f"expected all, every=K or names like p01,p02, got {spec!r}")
    wanted = {int(n[1:]) for n in names}
    return lambda name: _number(name) in wanted


def _number(name: str) -> int | None:
    match = re.fullmatch(r"p(\d+)", name)
    return int(match[1]) if match else None


def select_problems(
    root: pathlib.Path, domains: Sequence[str] | None, levels: Sequence[str], problems: str
) -> list[Problem]:
    """The selected test problems, domain by domain; one InputError for an unknown domain or level or an empty
    selection."""
    available = sorted(p.parent.name for p in root.glob("*/domain.pddl"))
    if not available:
        raise InputError(root, "no <domain>/domain.pddl here: not a benchmark in IPC layout")
    domains = list(domains) if domains else available
    for domain in domains:
        if domain not in available:
            raise InputError("--domains", f"no domain '{domain}' under {root} (found: {', '.join(available)})")
    wanted = problem_filter(problems)
    if not levels:
        raise InputError("--levels", "no level given")
    selected = []
    for domain in domains:
        found = sorted(p.name for p in (root / domain / TESTING).glob("*/") if p.is_dir())
        for level in levels:
            if level not in found:
                raise InputError("--levels", f"no level '{level}' in {root / domain / TESTING}")
            for path in sorted((root / domain / TESTING / level).glob("*.pddl")):
                if wanted(path.stem):
                    selected.append(Problem(domain, level, path.stem, path.resolve()))
    if not selected:
        raise InputError("--problems", f"{problems!r} selects no problem in {', '.join(domains)}")
    return selected


def resolve_planners(names: Sequence[str]) -> list[Planner]:
    """`recommended` (configs/recommended.py), a Fast Downward baseline, or a config file path (named by its stem)."""
    from statecentric_jax.experiments import sweep  # loads config files

    if not names:
        raise InputError("--planners", "no planner given")
    planners = []
    for name in names:
        if name in FAST_DOWNWARD:
            planners.append(Planner(name, search=FAST_DOWNWARD[name], source=name))
            continue
        path = REPO / "configs" / "recommended.py" if name == RECOMMENDED else pathlib.Path(name)
        if not name.endswith(".py") and name != RECOMMENDED:
            raise InputError("--planners", f"'{name}' is not {RECOMMENDED}, {', '.join(FAST_DOWNWARD)} or a .py config")
        if not path.is_file():
            raise InputError(path, "no such config file")
        planner_name = RECOMMENDED if name == RECOMMENDED else path.stem
        planners.append(
            Planner(
                planner_name,
                config=sweep.load_config(path),
                source=name if name == RECOMMENDED else str(path.resolve()),
            )
        )
    seen = [p.name for p in planners]
    if len(set(seen)) != len(seen):
        raise InputError("--planners", f"two planners with one name: {','.join(seen)}")
    return planners


def reference_costs(root: pathlib.Path) -> dict[str, float]:
    path = root / REFERENCE_FILE
    if not path.is_file():
        return {}
    try:
        costs = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in costs.items()}
    except (ValueError, AttributeError, TypeError) as e:
        raise InputError(path, f"not a JSON object of costs ({e})") from None


# ---------------------------------------------------------------- running one planner process under the limits


@dataclasses.dataclass(frozen=True)
class Finished:
    """How a limited process ended: `limit` is 'timeout', 'memory' or None (it exited by itself)."""

    returncode: int | None
    limit: str | None
    seconds: float  # from the start of its clock to its end
    startup_seconds: float  # from its start to the start of its clock
    peak_mb: float
    stdout: str


_stopping = threading.Event()  # set when the benchmark is interrupted: every watched process is killed


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    for p in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):  # a child that just ended
            total += p.memory_info().rss
    return total


def run_limited(
    command: Sequence[str],
    cwd: pathlib.Path,
    limits: Limits,
    clock_file: pathlib.Path | None = None,
    done_file: pathlib.Path | None = None,
    log: pathlib.Path | None = None,
) -> Finished:
    """Run `command`, killing its process group when its clock passes the time limit (plus `GRACE_S`) or its process
    tree's resident memory passes the memory limit. The clock starts at the start, or when the process writes its
    `time.monotonic()` into `clock_file`; once `done_file` exists the process has its result and is not killed.
    Its output goes to `log` (default `cwd/stdout.txt`)."""
    started = time.monotonic()
    log = log or cwd / "stdout.txt"
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    watched = psutil.Process(proc.pid)
    peak, limit, clock = 0, None, None if clock_file else started
    try:
        while proc.poll() is None:
            now = time.monotonic()
            if clock is None and clock_file is not None and clock_file.is_file():
                clock = float(clock_file.read_text() or now)
            peak = max(peak, _tree_rss(watched))
            if _stopping.is_set():
                raise KeyboardInterrupt
            if done_file is None or not done_file.is_file():
                if peak > limits.memory_limit_mb * 2**20:
                    limit = "memory"
                elif now - (clock if clock is not None else started) > (
                    limits.time_limit + GRACE_S if clock is not None else STARTUP_LIMIT_S
                ):
                    limit = "timeout" if clock is not None else "startup"
                if limit:
                    _kill(proc)
                    break
            time.sleep(POLL_S)
    except BaseException:
        _kill(proc)
        raise
    ended = time.monotonic()
    proc.wait()
    if clock is None and clock_file is not None and clock_file.is_file():
        clock = float(clock_file.read_text() or ended)
    clock = clock if clock is not None else ended
    return Finished(
        proc.returncode if limit is None else None,
        limit,
        round(ended - clock, 3),
        round(clock - started, 3),
        round(peak / 2**20, 1),
        log.read_text(encoding="utf-8", errors="replace"),
    )


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


# ---------------------------------------------------------------- one (planner, problem)


def _over(limit: str, limits: Limits) -> str:
    if limit == "memory":
        return f"killed above {limits.memory_limit_mb} MiB resident"
    return f"no plan within {limits.time_limit:g} s"


def _killed_from_outside(finished: Finished) -> bool:
    """Killed by a signal that was not this benchmark's (the system's OOM killer, say): planned again by a rerun."""
    return finished.limit is None and finished.returncode is not None and finished.returncode < 0


def _fast_downward(planner: Planner, problem: Problem, limits: Limits, tmp: pathlib.Path) -> dict:
    assert planner.search is not None
    plan_file = tmp / "plan"
    command = [sys.executable, fast_downward.driver_path(), "--plan-file", str(plan_file), "--sas-file"]
    # its own CPU-time limit, never reached first: it stops a planner whose parent was killed
    command = [*command[:2], "--overall-time-limit", f"{math.ceil(limits.time_limit + GRACE_S) + 1}s", *command[2:]]
    command += [str(tmp / "output.sas"), str(problem.domain_file), str(problem.path)]
    finished = run_limited([*command, "--search", planner.search], tmp, limits)
    expanded = re.findall(r"Expanded (\d+) state", finished.stdout)
    result = {
        "seconds": finished.seconds,
        "startup_seconds": finished.startup_seconds,
        "peak_mb": finished.peak_mb,
        "expansions": int(expanded[-1]) if expanded else None,
        "plan": None,
    }
    code = finished.returncode
    if finished.limit:
        return {**result, "outcome": finished.limit, "message": _over(finished.limit, limits)}
    if code in (0, 1, 2, 3) and plan_file.is_file():
        from statecentric_jax.planning.plans import read_plan

        return {**result, "outcome": "solved", "message": "", "plan": read_plan(plan_file)}
    if code in (10, 11, 12):
        return {**result, "outcome": "unsolved", "message": f"Fast Downward exit code {code}: no plan"}
    if code in (20, 22, 24):
        return {**result, "outcome": "memory", "message": f"Fast Downward exit code {code}: out of memory"}
    if code in (21, 23):
        return {**result, "outcome": "timeout", "message": _over("timeout", limits)}
    last = finished.stdout.strip().splitlines()[-1:] or ["no output"]
    message = f"Fast Downward exit code {code}: {last[0][:200]}"
    return {**result, "outcome": "error", "message": message, "retry": _killed_from_outside(finished)}


def _ours(planner: Planner, problem: Problem, limits: Limits, tmp: pathlib.Path, run_dir: pathlib.Path) -> dict:
    request: dict[str, object] = {"run": str(run_dir), "domain": str(problem.domain_file)}
    request.update(problem=str(problem.path), clock=str(tmp / "clock"), result=str(tmp / "result.json"))
    request.update(grounded=str(tmp / "grounded"))
    request.update(time_limit=limits.time_limit, memory_limit_mb=int(limits.memory_limit_mb * SEARCH_MEMORY_SHARE))
    (tmp / "request.json").write_text(json.dumps(request), encoding="utf-8")
    command = [sys.executable, "-m", "statecentric_jax.experiments.ipc", str(tmp / "request.json")]
    finished = run_limited(command, tmp, limits, tmp / "clock", tmp / "result.json")
    base: dict[str, object] = {
        "seconds": finished.seconds,
        "startup_seconds": finished.startup_seconds,
        "peak_mb": finished.peak_mb,
    }
    base.update(expansions=None, plan=None)
    if (tmp / "result.json").is_file():
        child = json.loads((tmp / "result.json").read_text(encoding="utf-8"))
        return {**base, **child}
    if finished.limit in ("timeout", "memory"):
        where = "searching" if (tmp / "grounded").is_file() else "grounding"  # grounding alone can outlast the limits
        return {**base, "outcome": finished.limit, "message": f"{_over(finished.limit, limits)}, killed while {where}"}
    if finished.limit == "startup":
        return {**base, "outcome": "error", "message": f"loading the model took over {STARTUP_LIMIT_S:g} s"}
    last = finished.stdout.strip().splitlines()[-1:] or ["no output"]
    message = f"exit code {finished.returncode}: {last[0][:200]}"
    return {**base, "outcome": "error", "message": message, "retry": _killed_from_outside(finished)}


def plan_in_this_process(request_file: str) -> None:
    """The child of `_ours`: load the run (start-up), then start the clock, read and plan the problem, and write
    the result atomically (a result written is final)."""
    request = json.loads(pathlib.Path(request_file).read_text(encoding="utf-8"))
    from statecentric_jax.learning.ensemble import load_run
    from statecentric_jax.method.evaluation import cost_to_go_for
    from statecentric_jax.planning.tasks import load_task
    from statecentric_jax.search.base import decode_config
    from statecentric_jax.search.decoding import decode

    def finish(result: dict) -> None:
        write_text(request["result"], json.dumps(result))

    loaded = load_run(request["run"])
    cost_to_go = cost_to_go_for(loaded, decode_config(loaded.config))
    write_text(request["clock"], repr(time.monotonic()))
    started = time.perf_counter()
    try:
        task = load_task(request["domain"], request["problem"])
    except InputError as e:
        return finish({"outcome": "error", "message": str(e), "seconds": round(time.perf_counter() - started, 3)})
    write_text(request["grounded"], "")  # the harness's kill message tells grounding from search by it
    left = max(request["time_limit"] - (time.perf_counter() - started), 1e-3)  # the search stops itself in time
    limits = {"time_limit": left, "memory_limit_mb": request["memory_limit_mb"]}
    settings = decode_config(loaded.config, budget=sys.maxsize, **limits)  # the limits bound it, not a node count
    result = decode([task], loaded.model, loaded.encoder, settings, cost_to_go=cost_to_go)[0]
    outcome = "solved" if result.solved else _DECODE_OUTCOMES.get(result.outcome, "unsolved")
    finish(
        {
            "outcome": "error" if result.outcome.startswith("cannot encode") else outcome,
            "message": "" if result.solved else result.outcome,
            "seconds": round(time.perf_counter() - started, 3),
            "expansions": result.expanded,
            "plan": result.plan if result.solved else None,
        }
    )


def check_in_this_process(request_file: str) -> None:
    """Replay a plan in the symbolic simulator (and VAL when on PATH); writes the reason it is invalid, or null."""
    from statecentric_jax.planning.plans import PlanError, format_plan, simulate
    from statecentric_jax.planning.tasks import load_task

    request = json.loads(pathlib.Path(request_file).read_text(encoding="utf-8"))
    try:
        task = load_task(request["domain"], request["problem"])
    except InputError as e:
        return write_text(request["result"], json.dumps({"error": f"plan not checked: {e}"}))
    try:
        simulate(task, request["plan"], source=request["problem"])
    except PlanError as e:
        return write_text(request["result"], json.dumps({"invalid": e.reason}))
    val = shutil.which("Validate")
    if val:
        plan_file = pathlib.Path(request["result"]).with_name("checked.plan")
        plan_file.write_text(format_plan(request["plan"]), encoding="utf-8")
        proc = subprocess.run(
            [val, request["domain"], request["problem"], str(plan_file)], capture_output=True, text=True
        )
        if proc.returncode != 0 or "Plan valid" not in proc.stdout:
            return write_text(request["result"], json.dumps({"invalid": "VAL rejected the plan"}))
    write_text(request["result"], json.dumps({}))


def _check(problem: Problem, plan: list[str], limits: Limits, tmp: pathlib.Path) -> dict:
    """Re-check a plan in a process of its own (grounding for replay can be large): {} when valid."""
    request: dict[str, object] = {"domain": str(problem.domain_file)}
    request["problem"] = str(problem.path)
    request.update(plan=plan, result=str(tmp / "check.json"))
    (tmp / "check-request.json").write_text(json.dumps(request), encoding="utf-8")
    command = [sys.executable, "-m", "statecentric_jax.experiments.ipc", "--check", str(tmp / "check-request.json")]
    finished = run_limited(command, tmp, Limits(CHECK_LIMIT_S, limits.memory_limit_mb))
    if (tmp / "check.json").is_file():
        return json.loads((tmp / "check.json").read_text(encoding="utf-8"))
    return {"error": f"plan not checked: the check ended with {finished.limit or finished.returncode}"}


def solve_one(planner: Planner, problem: Problem, limits: Limits, run_dir: str | None, plan_file: str) -> dict:
    """Plan one problem in a process of its own, re-check the plan, write it to `plan_file` if valid; the record's
    fields besides the fingerprint. The unit of work of both backends."""
    with tempfile.TemporaryDirectory(prefix="ipc-") as tmp:
        if planner.search is not None:
            result = _fast_downward(planner, problem, limits, pathlib.Path(tmp))
        else:
            result = _ours(planner, problem, limits, pathlib.Path(tmp), pathlib.Path(str(run_dir)))
        if result["outcome"] == "solved" and result["seconds"] > limits.time_limit:  # between two looks at the clock
            result.update(outcome="timeout", message=_over("timeout", limits), plan=None)
        if result["outcome"] == "solved":
            verdict = _check(problem, result["plan"], limits, pathlib.Path(tmp))
            if "invalid" in verdict:
                result.update(outcome="invalid", message=verdict["invalid"])
            elif "error" in verdict:
                result.update(outcome="error", message=verdict["error"], retry=True)
            else:
                from statecentric_jax.planning.plans import format_plan

                pathlib.Path(plan_file).parent.mkdir(parents=True, exist_ok=True)
                write_text(plan_file, format_plan(result["plan"]))
    solved = result["outcome"] == "solved"
    if not solved:
        pathlib.Path(plan_file).unlink(missing_ok=True)  # an earlier run's plan is not this record's
    return _record(
        planner,
        problem,
        result["outcome"],
        result.get("message", ""),
        plan=result["plan"] if solved else None,
        seconds=result["seconds"],
        startup_seconds=result.get("startup_seconds"),
        expansions=result.get("expansions"),
        peak_mb=result.get("peak_mb"),
        retry=result.get("retry", False),
    )


# ---------------------------------------------------------------- training our planner


def train_in_child(
    planner: Planner, root: pathlib.Path, domain: str, workdir: pathlib.Path, limits: Limits
) -> tuple[pathlib.Path | None, str]:
    """Our planner for `domain`: a finished training of the same planner, or `train_planner` in a process of its own
    under the training limits, so that a training that runs out of memory or time fails that domain only. Returns
    (the run, "") or (None, why it failed). The training's log is `<workdir>/<planner>/<domain>/training.log`; its
    wall seconds and peak resident memory go to `training.json` beside it."""
    base = workdir / planner.name / domain
    try:
        finished_run = _finished_training(planner, base)
    except InputError as e:
        return None, str(e)
    if finished_run is not None:
        return finished_run, ""
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ipc-train-") as tmp:
        request = {"planner": planner.source, "root": str(root), "domain": domain, "workdir": str(workdir)}
        request["result"] = str(pathlib.Path(tmp) / "trained.json")
        (pathlib.Path(tmp) / "request.json").write_text(json.dumps(request), encoding="utf-8")
        command = [sys.executable, "-m", "statecentric_jax.experiments.ipc", "--train", f"{tmp}/request.json"]
        finished = run_limited(command, pathlib.Path(tmp), limits, log=base / TRAINING_LOG)
        result = read_own_json(request["result"]) or {}
    write_text(base / TRAINING_FILE, json.dumps({"seconds": finished.seconds, "peak_mb": finished.peak_mb}))
    if "run" in result:
        return pathlib.Path(result["run"]), ""
    if finished.limit == "memory":
        return None, f"killed above {limits.memory_limit_mb} MiB resident"
    if finished.limit == "timeout":
        return None, f"not finished within {limits.time_limit:g} s"
    last = finished.stdout.strip().splitlines()[-1:] or ["no output"]
    return None, result.get("error") or f"exit code {finished.returncode}: {last[0][:200]}"


def train_in_this_process(request_file: str) -> None:
    """The child of `train_in_child`: writes {"run": path} or {"error": the one-line reason}."""
    flags.FLAGS.mark_as_parsed()  # no flags here; absl then logs without a warning, in the launcher's format
    logging.use_absl_handler()
    logging.set_verbosity(logging.INFO)
    request = json.loads(pathlib.Path(request_file).read_text(encoding="utf-8"))
    planner = resolve_planners([request["planner"]])[0]
    root, workdir = pathlib.Path(request["root"]), pathlib.Path(request["workdir"])
    try:
        result = {"run": str(train_planner(planner, root, request["domain"], workdir))}
    except InputError as e:
        result = {"error": str(e)}
    write_text(request["result"], json.dumps(result))


def _finished_training(planner: Planner, base: pathlib.Path) -> pathlib.Path | None:
    """The run in `base` if it was trained for this planner (`planner.json`; settings added since it was written
    mean their defaults); None if not yet, or for the same config with another selection menu (chosen again, its
    candidates reused: `selection._train`); an InputError if for another config."""
    from statecentric_jax.method.selection import RUN_DIR

    run_dir, trained = base / RUN_DIR, base / TRAINED_FILE
    if not (trained.is_file() and (run_dir / "config.json").is_file()):
        return None
    stored, wanted = _settings(trained.read_text(encoding="utf-8")), _settings(planner.identity)
    if stored is not None and stored == wanted:
        return run_dir
    if stored is not None and wanted is not None:
        stored.pop("selection", None)
        wanted.pop("selection", None)
        if stored == wanted:
            return None
    raise InputError(base, "holds a run of another configuration; use a fresh --workdir")


def _settings(identity: str) -> dict | None:
    """A config planner's identity as settings, with those added since it was written at their defaults (None if
    not a config's)."""
    from statecentric_jax import config as config_lib

    try:
        settings = json.loads(identity)
    except json.JSONDecodeError:
        return None
    return config_lib.with_defaults(settings) if isinstance(settings, dict) else None


def train_planner(planner: Planner, root: pathlib.Path, domain: str, workdir: pathlib.Path) -> pathlib.Path:
    """Our planner for `domain`, trained once into `<workdir>/<planner>/<domain>/run/` from the domain's training
    problems only (the pipeline reads an IPC root through its training view); a config with a `selection` section
    (`recommended`) first chooses its settings (`method/selection.py`). A finished training of the same planner is
    reused (`<workdir>/<planner>/<domain>/planner.json`)."""
    from statecentric_jax.method import pipeline, selection

    assert planner.config is not None
    base = workdir / planner.name / domain
    finished_run = _finished_training(planner, base)
    if finished_run is not None:
        return finished_run
    config = planner.config.copy_and_resolve_references()
    config.data.pddl_root, config.data.domain = str(root), domain
    config.data.cache_dir = str(workdir / "cache")
    if "selection" in config:
        selection.select_and_train(config, base)
    else:
        pipeline.train_from_config(config, base / selection.RUN_DIR)
    write_text(base / TRAINED_FILE, planner.identity)
    return base / selection.RUN_DIR


# ---------------------------------------------------------------- the benchmark


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


def fingerprint(identity: str, problem: Problem, limits: Limits) -> str:
    """A record's key beside the planner and problem: what the planner's result depends on (`planned_identity`),
    the domain and problem files and the limits."""
    domain_file = problem.domain_file
    return _digest(
        identity.encode(),
        domain_file.read_bytes(),
        problem.path.read_bytes(),
        json.dumps(dataclasses.asdict(limits), sort_keys=True).encode(),
    )


def planned_identity(run_dir: pathlib.Path) -> str:
    """What our planner's plans depend on once trained: its run's files (`evaluation.run_files_fingerprint`), not
    its config, so that a run chosen alike under another selection menu keeps its records."""
    from statecentric_jax.method.evaluation import run_files_fingerprint

    return f"run {run_files_fingerprint(run_dir)}"


def read_records(path: pathlib.Path) -> list[dict]:
    records = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn line of a killed run
            if isinstance(record, dict):
                records.append(record)
    return records


def _execute(calls: dict[str, tuple], jobs: int, backend: str, on_done: Callable[[str, dict], None]) -> None:
    """`solve_one(*args)` for every call, `jobs` at a time (local threads, each watching one process) or as Ray
    tasks."""
    if backend == "ray":
        from statecentric_jax.experiments import distributed

        def done(key: str, record: object, error: str | None) -> None:
            planner, problem = calls[key][:2]
            on_done(key, _error_record(planner, problem, f"Ray task failed: {error}") if error else dict(record))  # type: ignore[call-overload]

        distributed.run_tasks(solve_one, calls, done)
        return
    _stopping.clear()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(solve_one, *args): key for key, args in calls.items()}
        try:
            for future in concurrent.futures.as_completed(futures):
                on_done(futures[future], future.result())
        except BaseException:  # Ctrl-C: start nothing more, kill what runs; those problems stay unrecorded
            _stopping.set()
            pool.shutdown(cancel_futures=True)
            raise


def run(
    root: str | os.PathLike,
    workdir: str | os.PathLike,
    *,
    domains: Sequence[str] | None = None,
    levels: Sequence[str] = DEFAULT_LEVELS,
    problems: str = "all",
    planners: Sequence[str] = (RECOMMENDED, "lama_first", "gbfs_ff"),
    time_limit: float,
    memory_limit_mb: int = 8192,
    training_time_limit: float = TRAINING_LIMITS[0],
    training_memory_limit_mb: int = TRAINING_LIMITS[1],
    jobs: int = 1,
    backend: str = "local",
    replan: Sequence[str] = (),
) -> dict:
    """Plan every selected test problem with every planner (training ours per domain first, from the training
    problems only), resuming from `workdir`'s records; writes the tables and returns the coverage per planner.
    `replan`: planners whose selected problems are planned again even where a record matches (a record's
    fingerprint covers the planner's settings, not its code); their records are marked `retry` first."""
    root = pathlib.Path(root)
    if not root.is_dir():
        raise InputError("--root", f"{root} is not a directory")
    if not time_limit > 0 or not math.isfinite(time_limit):
        raise InputError("--time_limit", f"must be a positive number of seconds, not {time_limit}")
    if memory_limit_mb < 1:
        raise InputError("--memory_limit_mb", f"must be positive, not {memory_limit_mb}")
    if not training_time_limit > 0 or not math.isfinite(training_time_limit):
        raise InputError("--training_time_limit", f"must be a positive number of seconds, not {training_time_limit}")
    if training_memory_limit_mb < 1:
        raise InputError("--training_memory_limit_mb", f"must be positive, not {training_memory_limit_mb}")
    if jobs < 1:
        raise InputError("--jobs", f"must be at least 1, not {jobs}")
    if backend not in ("local", "ray"):
        raise InputError("--backend", f"must be local or ray, not {backend!r}")
    selected = select_problems(root, domains, levels, problems)
    chosen = resolve_planners(planners)
    unknown = sorted(set(replan) - {p.name for p in chosen})
    if unknown:
        raise InputError("--replan", f"not among --planners: {', '.join(unknown)}")
    references = reference_costs(root)
    limits = Limits(float(time_limit), int(memory_limit_mb))
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if backend == "ray":
        from statecentric_jax.experiments import distributed

        distributed.init()
    with exclusive_lock(workdir, "a benchmark run"), _sigterm_interrupts():
        training_limits = Limits(float(training_time_limit), int(training_memory_limit_mb))
        return _run_locked(
            root.resolve(),
            workdir.resolve(),
            selected,
            chosen,
            references,
            limits,
            training_limits,
            jobs,
            backend,
            frozenset(replan),
        )


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops a run as Ctrl-C does: the planners in flight are killed, not left running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _record_id(planner: str, key: str) -> str:
    return f"{planner}|{key}"


def _run_locked(
    root: pathlib.Path,
    workdir: pathlib.Path,
    selected: list[Problem],
    planners: list[Planner],
    references: dict[str, float],
    limits: Limits,
    training_limits: Limits,
    jobs: int,
    backend: str,
    replan: frozenset[str],
) -> dict:
    records_file = workdir / RECORDS_FILE
    earlier = {  # by (planner, problem) and fingerprint: records of other selections or limits are kept
        (_record_id(r.get("planner", ""), r.get("key", "")), r.get("fingerprint")): r
        for r in read_records(records_file)
    }
    if replan:  # marked in the file first, so that an interrupted replanning resumes without the flag
        again = {_record_id(p.name, q.key) for p in planners if p.name in replan for q in selected}
        for (rid, _), kept_record in earlier.items():
            if rid in again:
                kept_record["retry"] = True
        write_text(records_file, "".join(json.dumps(r) + "\n" for r in earlier.values()))
    fingerprints: dict[str, str] = {}
    finished: dict[str, dict] = {}
    lock = threading.Lock()
    with open_for_append(records_file) as log:

        def on_done(rid: str, record: dict) -> None:
            record["fingerprint"] = fingerprints[rid]
            with lock:
                finished[rid] = record
                log.write(json.dumps(record) + "\n")
                log.flush()
            logging.info("%s %s: %s in %.1f s", record["planner"], record["key"], record["outcome"], record["seconds"])

        for domain in dict.fromkeys(q.domain for q in selected):
            run_dirs: dict[str, str] = {}
            identities = {planner.name: planner.identity for planner in planners}
            untrained: dict[str, str] = {}
            for planner in (p for p in planners if p.config is not None):
                run_dir, failure = train_in_child(planner, root, domain, workdir, training_limits)  # before any
                if run_dir is None:  # test problem of the domain is read
                    logging.error("%s cannot be trained for %s: %s", planner.name, domain, failure)
                    untrained[planner.name] = f"training failed: {failure}"
                else:
                    run_dirs[planner.name] = str(run_dir)
                    identities[planner.name] = planned_identity(run_dir)
            calls = {}
            for problem in (q for q in selected if q.domain == domain):
                for planner in planners:
                    rid = _record_id(planner.name, problem.key)
                    fingerprints[rid] = fingerprint(identities[planner.name], problem, limits)
                    record = earlier.get((rid, fingerprints[rid]))
                    if record and not record.get("retry"):
                        finished[rid] = record
                    elif planner.name in untrained:
                        on_done(rid, {**_error_record(planner, problem, untrained[planner.name]), "retry": True})
                    else:
                        plan_file = str(plan_path(workdir, planner.name, problem))
                        calls[rid] = (planner, problem, limits, run_dirs.get(planner.name), plan_file)
            logging.info("%s: %d (planner, problem) pairs to plan", domain, len(calls))
            _execute(calls, jobs, backend, on_done)
    current = [finished[rid] for rid in fingerprints if rid in finished]
    kept = earlier | {(rid, record["fingerprint"]): record for rid, record in finished.items()}
    write_text(records_file, "".join(json.dumps(r) + "\n" for r in kept.values()))  # each record once
    return write_tables(workdir, current, references, [p.name for p in planners])


def plan_path(workdir: pathlib.Path, planner: str, problem: Problem) -> pathlib.Path:
    return workdir / planner / problem.domain / problem.level / f"{problem.name}.plan"


def _record(
    planner: Planner,
    problem: Problem,
    outcome: str,
    message: str,
    plan: list[str] | None = None,
    seconds: float = 0.0,
    startup_seconds: float | None = None,
    expansions: int | None = None,
    peak_mb: float | None = None,
    retry: bool = False,
) -> dict:
    """A record's fields besides the fingerprint; a plan only where the outcome is `solved`."""
    return {
        "planner": planner.name,
        "domain": problem.domain,
        "level": problem.level,
        "problem": problem.name,
        "key": problem.key,
        "solved": outcome == "solved",
        "plan_cost": len(plan) if plan is not None else None,
        "seconds": seconds,
        "startup_seconds": startup_seconds,
        "expansions": expansions,
        "peak_mb": peak_mb,
        "outcome": outcome,
        "message": message,
        "plan": plan,
        "retry": retry,
    }


def _error_record(planner: Planner, problem: Problem, message: str) -> dict:
    return _record(planner, problem, "error", " ".join(message.split()))


# ---------------------------------------------------------------- tables


def with_references(records: Iterable[dict], references: dict[str, float]) -> list[dict]:
    """Each record with its `reference_cost`: the root's reference_costs.json, else the best cost of this run."""
    records = list(records)
    best: dict[str, float] = {}
    for r in records:
        if r["solved"]:
            best[r["key"]] = min(best.get(r["key"], math.inf), r["plan_cost"])
    return [{**r, "reference_cost": references.get(r["key"], best.get(r["key"]))} for r in records]


def write_tables(workdir: pathlib.Path, records: list[dict], references: dict[str, float], planners: list[str]) -> dict:
    """results.csv, coverage.md, quality.md and cumulative.png from the records; returns solved/total per planner."""
    rows = with_references(records, references)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=RESULT_FIELDS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_text(workdir / "results.csv", buffer.getvalue())
    domains = dict.fromkeys(r["domain"] for r in rows)
    trainings = {(p, d): read_own_json(workdir / p / d / TRAINING_FILE) for p in planners for d in domains}
    write_text(workdir / "coverage.md", coverage_table(rows, planners, trainings))
    source = "reference_costs.json of the benchmark" if references else "the best cost found in this run"
    write_text(workdir / "quality.md", quality_table(rows, planners, source))
    cumulative_plot(rows, planners, workdir / "cumulative.png")
    return {
        p: f"{sum(r['solved'] for r in rows if r['planner'] == p)}/{sum(r['planner'] == p for r in rows)}"
        for p in planners
    }


def _table(header: Sequence[str], body: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def coverage_table(rows: list[dict], planners: Sequence[str], trainings: dict[tuple[str, str], dict | None]) -> str:
    """Problems solved / attempted, planners x domains: overall, then one table per level; then the outcomes, and
    what each training of ours took (`trainings`: by (planner, domain), the training.json or None)."""
    domains = list(dict.fromkeys(r["domain"] for r in rows))
    levels = list(dict.fromkeys(r["level"] for r in rows))

    def cell(planner: str, domain: str | None, level: str | None) -> str:
        chosen = [
            r for r in rows if r["planner"] == planner and domain in (None, r["domain"]) and level in (None, r["level"])
        ]
        return f"{sum(r['solved'] for r in chosen)}/{len(chosen)}" if chosen else "-"

    parts = []
    for level in [None, *levels]:
        title = "## Coverage, all levels" if level is None else f"## Coverage, {level}"
        body = [[p, *(cell(p, d, level) for d in domains), cell(p, None, level)] for p in planners]
        parts.append(f"{title}\n\n" + _table(["planner", *domains, "total"], body))
    outcomes = [[p, *(sum(r["outcome"] == o for r in rows if r["planner"] == p) for o in OUTCOMES)] for p in planners]
    parts.append("## Outcomes\n\n" + _table(["planner", *OUTCOMES], outcomes))
    trained = [(p, d, t) for (p, d), t in trainings.items() if isinstance(t, dict)]
    if trained:
        body = [[p, d, f"{t.get('seconds', 0):.0f}", f"{t.get('peak_mb', 0):.0f}"] for p, d, t in trained]
        parts.append(
            "## Training (last run, wall clock)\n\n" + _table(["planner", "domain", "seconds", "peak MiB"], body)
        )
    return "\n".join(parts)


def quality_table(rows: list[dict], planners: Sequence[str], source: str) -> str:
    """IPC quality score (sum of reference / cost over solved problems) and the geometric mean of cost / reference
    over solved problems, planners x domains."""
    domains = list(dict.fromkeys(r["domain"] for r in rows))

    def solved(planner: str, domain: str | None) -> list[dict]:
        return [
            r
            for r in rows
            if r["planner"] == planner and domain in (None, r["domain"]) and r["solved"] and r["reference_cost"]
        ]

    def score(chosen: list[dict]) -> str:
        return f"{sum(min(1.0, r['reference_cost'] / max(r['plan_cost'], 1)) for r in chosen):.2f}"

    def ratio(chosen: list[dict]) -> str:
        if not chosen:
            return "-"
        logs = [math.log(max(r["plan_cost"], 1) / r["reference_cost"]) for r in chosen]
        return f"{math.exp(sum(logs) / len(logs)):.3f}"

    parts = [f"Reference costs: {source}.\n"]
    for title, measure in (
        ("Quality score (sum of reference / cost)", score),
        ("Cost / reference, geometric mean", ratio),
    ):
        body = [[p, *(measure(solved(p, d)) for d in domains), measure(solved(p, None))] for p in planners]
        parts.append(f"## {title}\n\n" + _table(["planner", *domains, "total"], body))
    return "\n".join(parts)


def cumulative_plot(rows: list[dict], planners: Sequence[str], path: pathlib.Path) -> None:
    """Problems solved within t seconds against t (log x), one step curve per planner."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    longest = max([1.0, *(r["seconds"] for r in rows)])
    for planner in planners:
        times = sorted(max(r["seconds"], 1e-2) for r in rows if r["planner"] == planner and r["solved"])
        ax.step([1e-2, *times, longest], [0, *range(1, len(times) + 1), len(times)], where="post", label=planner)
    ax.set_xscale("log")
    ax.set_xlim(1e-2, longest)
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("time per problem (s)")
    ax.set_ylabel("problems solved")
    ax.set_title(f"problems solved within a time, of {len({r['key'] for r in rows})} per planner")
    ax.legend()
    fig.tight_layout()
    replace_atomically(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120))
    plt.close(fig)


def _end_with_parent() -> None:
    """A child process ends when the benchmark process that watches its limits is gone (killed)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":  # the child processes: training, our planner on one problem, or the re-check of one plan
    _end_with_parent()
    if sys.argv[1] == "--train":
        train_in_this_process(sys.argv[2])
    elif sys.argv[1] == "--check":
        check_in_this_process(sys.argv[2])
    else:
        plan_in_this_process(sys.argv[1])
