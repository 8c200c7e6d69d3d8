"""Solve every problem of some splits, replay the plans, and store trajectories.

Layout under the work directory, per domain and split:

  <domain>/<split>/records/<problem>.json   one per problem: the resumable manifest
  <domain>/<split>/manifest.json            all records of the split (no states)
  <domain>/<split>/trajectories.jsonl       one line per solved problem, sorted
  <domain>/<split>/plans/<problem>.plan     IPC plan files
  <domain>/planner-calls/<digest>.json      `solve_stored`'s records (other problems of the domain,
                                            e.g. started in an aggregated state), by content

A problem's record is written atomically as soon as it is finished, so a run
killed at any moment (even with kill -9) loses at most the problems in flight,
and a rerun skips every problem whose record is still valid for the same
inputs. The split-level files are derived from the records and rewritten
atomically once all of the split's problems have records.

Every plan is replayed in the symbolic core (`plans.simulate`), which validates
it and yields the states s_0..s_T stored with it.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import functools
import hashlib
import json
import os
import pathlib
import sys
from collections.abc import Sequence
from typing import Any, TypeGuard

from absl import logging

from statecentric_jax.atomic import check_writable, read_own_json, read_own_text, replace_atomically, write_text
from statecentric_jax.errors import InputError
from statecentric_jax.planning.plans import format_plan, simulate, write_plan
from statecentric_jax.planning.tasks import check_domain, load_task
from statecentric_jax.problems import fast_downward, layout

TRAJECTORY_KEYS = ("problem", "problem_file", "domain_file", "plan", "static", "states")
_PROVEN = ("solved", "unsolvable")  # results that do not depend on the limits
PLANNER_CALLS_DIR = "planner-calls"  # below a domain: `solve_stored`'s records


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One problem's result in this run; `cached` when taken from an earlier run."""

    domain: str
    split: str
    problem: str
    status: str
    message: str
    cached: bool


@dataclasses.dataclass
class Summary:
    """What a run did: per-problem outcomes plus failures that stopped a whole split."""

    outcomes: list[Outcome] = dataclasses.field(default_factory=list)
    split_failures: list[str] = dataclasses.field(default_factory=list)  # one line each
    bad_domains: list[str] = dataclasses.field(default_factory=list)  # one line each, also in split_failures
    strict: bool = False

    @property
    def failures(self) -> list[str]:
        return self.split_failures + [o.message for o in self.outcomes if o.status != "solved"]

    @property
    def exit_code(self) -> int:
        """2 for a bad domain file (the other domains still ran); 1 when nothing usable was produced,
        or with `strict` when anything failed."""
        if self.bad_domains:
            return 2
        solved = any(o.status == "solved" for o in self.outcomes)
        return 1 if not solved or (self.strict and self.failures) else 0

    def line(self, outcomes: Sequence[Outcome] | None = None) -> str:
        """'N solved (M cached), ...': counts per status (failed statuses only if any)."""
        outcomes = self.outcomes if outcomes is None else outcomes
        counts = collections.Counter(o.status for o in outcomes)
        cached = collections.Counter(o.status for o in outcomes if o.cached)
        shown = [s for s in fast_downward.STATUSES if s == "solved" or counts[s]]
        return ", ".join(f"{counts[s]} {s} ({cached[s]} cached)" for s in shown)

    def report(self) -> str:
        splits = collections.defaultdict(list)
        for o in self.outcomes:
            splits[f"{o.domain}/{o.split}"].append(o)
        lines = [f"{name}: {self.line(outcomes)}" for name, outcomes in splits.items()]
        failures = self.failures
        if failures:
            lines.append(f"{len(failures)} failure(s):")
            lines.extend(f"  {message}" for message in failures)
        lines.append(f"total: {self.line()}")
        return "\n".join(lines)


def _absolute(path: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(os.path.abspath(path))


def _fingerprint(domain_file: pathlib.Path, problem_file: pathlib.Path) -> str | None:
    """Hash of both files' contents: a record is reused only for unchanged inputs."""
    digest = hashlib.sha256()
    try:
        for path in (domain_file, problem_file):
            digest.update(path.read_bytes())
            digest.update(b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def _limits(configs: Sequence[fast_downward.SearchConfig], memory_limit_mb: int) -> dict:
    return {"configs": [[c.search, c.time_limit] for c in configs], "memory_limit_mb": memory_limit_mb}


def _read_record(path: pathlib.Path) -> dict | None:
    record = read_own_json(path)
    return record if isinstance(record, dict) else None  # absent, or garbage: solve again


def _holds(record: dict | None, inputs: str | None, limits: dict) -> TypeGuard[dict]:
    """Solved and unsolvable records hold for the same, unchanged files; the others only
    under the same limits too."""
    if record is None or inputs is None or record.get("inputs") != inputs:
        return False
    return record.get("status") in _PROVEN or (
        record.get("status") in fast_downward.STATUSES and record.get("limits") == limits
    )


def _reusable(record: dict | None, problem_file: pathlib.Path, inputs: str | None, limits: dict) -> TypeGuard[dict]:
    """A problem's record that `_holds`, for this problem file, with the replayed states of a plan."""
    return (
        _holds(record, inputs, limits)
        and record.get("problem_file") == str(problem_file)
        and (record["status"] != "solved" or "states" in record)
    )


def solve_stored(
    domain_file: pathlib.Path,
    problem_file: pathlib.Path,
    configs: Sequence[fast_downward.SearchConfig],
    records_dir: pathlib.Path,
    memory_limit_mb: int = 4096,
) -> dict:
    """Fast Downward's record (status, config, plan, seconds, message) for one problem, kept in `records_dir`
    under the digest of both files' contents: any later call on the same contents, from any run, reads it
    instead of planning again (as `_holds` allows). Not replayed: for callers that replay the plan."""
    inputs = _fingerprint(domain_file, problem_file)
    limits = _limits(configs, memory_limit_mb)
    path = records_dir / f"{inputs}.json"
    record = _read_record(path) if inputs is not None else None
    if _holds(record, inputs, limits):
        return record
    result = fast_downward.solve(domain_file, problem_file, configs, memory_limit_mb)
    fields = ("status", "config", "plan", "seconds", "message")
    record = {"inputs": inputs, "limits": limits, **{name: getattr(result, name) for name in fields}}
    if inputs is not None:
        records_dir.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(record) + "\n")
    return record


def _solve_problem(
    domain_file: pathlib.Path,
    problem_file: pathlib.Path,
    configs: Sequence[fast_downward.SearchConfig],
    memory_limit_mb: int,
) -> dict:
    """Solve, then replay the plan to validate it and get s_0..s_T; returns the record."""
    inputs = _fingerprint(domain_file, problem_file)  # before solving: what the result is for
    result = fast_downward.solve(domain_file, problem_file, configs, memory_limit_mb)
    record: dict[str, Any] = {
        "problem": problem_file.stem,
        "problem_file": str(problem_file),
        "domain_file": str(domain_file),
        "inputs": inputs,
        "limits": _limits(configs, memory_limit_mb),
        "status": result.status,
        "config": result.config,
        "plan": result.plan,
        "seconds": result.seconds,
        "message": result.message,
        "attempts": [dataclasses.asdict(a) for a in result.attempts],
    }
    if result.status == "solved":
        try:
            task = load_task(domain_file, problem_file)
            states = simulate(task, result.plan or [])
        except InputError as e:
            record.update(
                status="error", config=None, plan=None, message=f"{problem_file}: invalid plan from Fast Downward: {e}"
            )
        else:
            record["static"] = sorted(task.static)
            record["states"] = [sorted(state) for state in states]
    return record


class _Split:
    """One domain/split: its problems, their records and the files derived from them."""

    def __init__(self, pddl_root: str | os.PathLike, workdir: pathlib.Path, domain: str, split: str):
        self.domain, self.split = domain, split
        self.domain_file = _absolute(layout.domain_file(pddl_root, domain))
        self.problem_files = [_absolute(p) for p in layout.problem_files(pddl_root, domain, split)]
        self.dir = workdir / domain / split
        (self.dir / "records").mkdir(parents=True, exist_ok=True)
        self.records: dict[str, dict] = {}
        self.pending = 0  # problems still to solve in this run

    def record_path(self, problem_file: pathlib.Path) -> pathlib.Path:
        return self.dir / "records" / f"{problem_file.stem}.json"

    def outcome(self, record: dict, cached: bool) -> Outcome:
        return Outcome(self.domain, self.split, record["problem"], record["status"], record["message"], cached)

    def take_cached(self, limits: dict) -> tuple[list[Outcome], list[pathlib.Path]]:
        """Reuse the valid records of earlier runs; returns their outcomes and the problems left."""
        outcomes, left = [], []
        for problem_file in self.problem_files:
            record = _read_record(self.record_path(problem_file))
            if _reusable(record, problem_file, _fingerprint(self.domain_file, problem_file), limits):
                self.records[record["problem"]] = record
                outcomes.append(self.outcome(record, cached=True))
            else:
                left.append(problem_file)
        self.pending = len(left)
        return outcomes, left

    def store(self, record: dict) -> Outcome:
        """Keep a fresh record (atomically, so it survives a kill); finish the split after its last one."""
        self.records[record["problem"]] = record
        write_text(self.record_path(pathlib.Path(record["problem_file"])), json.dumps(record) + "\n")
        self.pending -= 1
        if self.pending == 0:
            self.finish()
        return self.outcome(record, cached=False)

    def finish(self) -> None:
        """Rewrite manifest, trajectories and plan files from the records."""
        records = [self.records[name] for name in sorted(self.records)]
        manifest = {
            "domain": self.domain,
            "split": self.split,
            "domain_file": str(self.domain_file),
            "problems": [{k: v for k, v in r.items() if k not in ("static", "states")} for r in records],
        }
        write_text(self.dir / "manifest.json", json.dumps(manifest, indent=1) + "\n")
        solved = [r for r in records if r["status"] == "solved"]
        lines = (json.dumps({k: r[k] for k in TRAJECTORY_KEYS}) + "\n" for r in solved)
        write_text(self.dir / "trajectories.jsonl", "".join(lines))
        plans = self.dir / "plans"
        plans.mkdir(exist_ok=True)
        for r in solved:
            path = plans / f"{r['problem']}.plan"
            if read_own_text(path) != format_plan(r["plan"]):
                replace_atomically(path, functools.partial(write_plan, actions=r["plan"]))


def _log(done: int, total: int, group: _Split, record: dict) -> None:
    name = f"{group.domain}/{group.split}/{record['problem']}"
    if record["status"] == "solved":
        logging.info(
            "[%d/%d] %s: solved by %s in %.2f s, %d steps",
            done,
            total,
            name,
            record["config"],
            record["seconds"],
            len(record["plan"]),
        )
    else:
        logging.warning("[%d/%d] %s: %s", done, total, record["status"], record["message"])


def _check_arguments(
    pddl_root: str | os.PathLike,
    workdir: str | os.PathLike,
    domains: Sequence[str] | None,
    splits: Sequence[str],
    astar_time_limit: float,
    gbfs_time_limit: float,
    memory_limit_mb: int,
) -> list[str]:
    """Refuse, before any work, what no problem could succeed with; returns the domains to solve. A domain
    folder without its domain file, or a split absent from some domains, stays a failure of those splits
    only (the batch goes on)."""
    for flag, number in (("astar_time_limit", astar_time_limit), ("gbfs_time_limit", gbfs_time_limit)):
        if not number > 0:
            raise InputError(f"--{flag}", f"{number} is not a positive number of seconds")
    if memory_limit_mb < 1:
        raise InputError("--memory_limit_mb", f"{memory_limit_mb} is not a positive number of MiB")
    if not pathlib.Path(pddl_root).is_dir():
        raise InputError(pddl_root, "PDDL root is not a directory")
    available = layout.available_domains(pddl_root)
    root = pathlib.Path(pddl_root)
    folders = [d for d in domains or () if d in available or (root / d).is_dir() or (root / "domains" / d).is_dir()]
    unknown = [d for d in domains or () if d not in folders]
    if unknown:
        raise InputError(
            "--domains", f"no domain {', '.join(unknown)} under {pddl_root} (found: {', '.join(available)})"
        )
    domains = list(domains or available)
    found = {p.name for d in domains if d in available for p in layout.domain_dir(pddl_root, d).iterdir() if p.is_dir()}
    if not found & set(splits):  # nothing to do; a split missing from some domains is their failure, reported
        raise InputError(
            "--splits",
            f"no split {', '.join(splits) or '(none named)'} in {', '.join(domains)}"
            f" (found: {', '.join(sorted(found))})",
        )
    check_writable(workdir)
    return domains


def generate_plans(
    pddl_root: str | os.PathLike,
    workdir: str | os.PathLike,
    domains: Sequence[str] | None = None,
    splits: Sequence[str] = ("train", "validation"),
    jobs: int | None = None,
    astar_time_limit: float = 60,
    gbfs_time_limit: float = 300,
    memory_limit_mb: int = 4096,
    strict: bool = False,
    fallback: str = "gbfs_ff",
) -> Summary:
    """Plans and trajectories for every problem of `domains` x `splits` (all domains by default).

    Problems run `jobs` at a time (default: one per core). Bad problems, missing
    splits, timeouts and unsolvable problems are reported in one line each and the
    rest goes on; the returned Summary says what happened and gives the exit code.
    `fallback`: the second tier's search (fast_downward.FALLBACKS), run for `gbfs_time_limit` seconds.
    """
    fast_downward.driver_path()  # fail once, up front, if the planner is missing
    domains = _check_arguments(pddl_root, workdir, domains, splits, astar_time_limit, gbfs_time_limit, memory_limit_mb)
    configs = fast_downward.default_configs(astar_time_limit, gbfs_time_limit, fallback)
    limits = _limits(configs, memory_limit_mb)
    summary = Summary(strict=strict)
    todo: list[tuple[_Split, pathlib.Path]] = []
    for domain in domains:
        for split in splits:
            try:
                group = _Split(pddl_root, pathlib.Path(workdir), domain, split)
            except InputError as e:
                summary.split_failures.append(str(e))
                logging.warning("%s", e)
                continue
            try:
                check_domain(group.domain_file)  # a bad domain is one line for the domain, not one per problem
            except InputError as e:
                if str(e) not in summary.bad_domains:
                    summary.bad_domains.append(str(e))
                    summary.split_failures.append(str(e))
                    print(f"error: {e}", file=sys.stderr)
                continue
            cached, left = group.take_cached(limits)
            summary.outcomes.extend(cached)
            todo.extend((group, problem_file) for problem_file in left)
            logging.info("%s/%s: %d problems, %d cached", domain, split, len(group.problem_files), len(cached))
            if not left:
                group.finish()

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1)
    try:
        futures = {pool.submit(_solve_problem, g.domain_file, p, configs, memory_limit_mb): g for g, p in todo}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            group, record = futures[future], future.result()
            summary.outcomes.append(group.store(record))
            _log(done, len(todo), group, record)
    except BaseException:  # Ctrl-C: stop now; finished problems are already stored
        pool.shutdown(wait=False, cancel_futures=True)
        fast_downward.kill_running()
        raise
    pool.shutdown()
    summary.outcomes.sort(key=lambda o: (o.domain, o.split, o.problem))
    logging.info("plan generation summary:\n%s", summary.report())
    return summary


def read_trajectories(path: str | os.PathLike) -> list[dict]:
    """The records of a `trajectories.jsonl` file, in file order."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(path, f"cannot read trajectories ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise InputError(path, "not a trajectories file (binary, not UTF-8 JSON lines)") from None
    trajectories = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            raise InputError(path, f"line {lineno} is not JSON ({e})") from None
        missing = [k for k in TRAJECTORY_KEYS if not isinstance(item, dict) or k not in item]
        if missing:
            raise InputError(path, f"line {lineno} lacks {', '.join(missing)}")
        lists = ("plan", "states", "static")
        if not all(isinstance(item[k], list) for k in lists) or not all(
            isinstance(state, list) and all(isinstance(atom, str) for atom in state) for state in item["states"]
        ):
            raise InputError(path, f"line {lineno}: plan, static and states must be lists (states of atom strings)")
        if len(item["states"]) != len(item["plan"]) + 1:
            raise InputError(path, f"line {lineno}: {len(item['plan'])} actions but {len(item['states'])} states")
        trajectories.append(item)
    return trajectories
