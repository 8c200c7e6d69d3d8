"""Evaluate a trained run on a split, and plan for a single problem.

Results go to `<workdir>/eval/<split>/`: `results.jsonl` grows one line per
finished instance (so an interrupted evaluation resumes where it stopped), and
`results.json`, `results.csv` and `summary.json` are rewritten atomically at the
end. Every record carries a fingerprint of what determines it: the model files, the
decoding settings, and the problem's resolved path and content (with its domain's).
A rerun reuses only records whose fingerprint matches and decodes the rest again;
at the end `results.jsonl` keeps only the current records. The fingerprint leaves out the
seed and what a run wrote about its training (losses, sizes, aggregation records), so
seeds with byte-identical models (XGBoost is trained once for all seeds) share results:
`reuse` names the other seeds' `results.jsonl` to take them from. One evaluation at a time
writes a split (`.lock`). Success means: the decoded plan replays in the symbolic simulator, reaches
the goal, and is no longer than the horizon (optionally also checked by VAL).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from absl import logging
from tqdm import tqdm

from statecentric_jax.atomic import check_writable, exclusive_lock, open_for_append, read_own_lines, write_text
from statecentric_jax.errors import InputError
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.learning.train import CONFIG_FILE, METRICS_FILE, SIZE_FILE, TRAINING_FILE, LoadedModel
from statecentric_jax.planning.plans import PlanError, format_plan, simulate
from statecentric_jax.planning.tasks import Task, check_domain, load_task
from statecentric_jax.problems import layout
from statecentric_jax.search.base import DecodeConfig, DecodeResult, decode_config
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import CostToGo, DecodeStats
from statecentric_jax.search.strategies import COST_TO_GO_STRATEGIES

# Files and folders of a run that decoding never reads: its evaluations, and the records of how it
# was trained (losses, model size, how the seeds were trained, aggregation.py's summary and rounds).
# records of how a run was trained or chosen (method/selection.py writes selection.json), not read by decoding
NOT_READ_BY_DECODING = frozenset(
    {"eval", METRICS_FILE, SIZE_FILE, TRAINING_FILE, "aggregation.json", "aggregation", "selection.json"}
)

RESULT_FIELDS = (
    "problem_file",
    "problem",
    "num_objects",
    "solved",
    "plan_length",
    "steps",
    "seconds",
    "outcome",
    "plan",
    "fingerprint",
    "estimates_at_most_zero",
)


def cost_to_go_for(loaded: LoadedModel, settings: DecodeConfig) -> CostToGo | None:
    """The run's learned cost-to-go, for the strategies that use it. An exploration queue that would
    go unused is refused, so no result claims a queue it did not have."""
    guided = settings.strategy in COST_TO_GO_STRATEGIES
    cost_to_go = loaded.cost_to_go if guided else None
    if cost_to_go is not None and cost_to_go.clipped != settings.clip_cost_to_go:
        cost_to_go = dataclasses.replace(cost_to_go, clipped=settings.clip_cost_to_go)
    if cost_to_go is None and settings.exploration != "none":
        needs = "a run with a cost-to-go (value.kind)" if guided else "--strategy=best_first"
        raise InputError(
            None,
            f"exploration '{settings.exploration}' needs best-first decoding with a cost-to-go:"
            f" use {needs}, or --exploration=none",
        )
    return cost_to_go


def check_plan(task: Task, result: DecodeResult, config: DecodeConfig, val_binary: str | None = None) -> DecodeResult:
    """Replay the plan independently of the decoder; success only if it is valid, reaches the
    goal and fits the horizon. An unsolved result keeps the decoder's reason (dead end, horizon)."""
    reason = None
    try:
        simulate(task, result.plan, source=task.problem_file, require_goal=result.solved)
    except PlanError as e:
        reason = f"invalid plan: {e.reason}"
    if reason is None and len(result.plan) > config.horizon(task):
        reason = f"plan longer than the horizon {config.horizon(task)}"
    if reason is None and result.solved and val_binary:
        reason = _val_check(val_binary, task, result.plan)
    if reason is not None and result.solved:
        logging.warning("%s: decoded plan rejected: %s", task.problem_file, reason)
    if reason is None and not result.solved:
        reason = result.outcome
    return dataclasses.replace(result, solved=reason is None, outcome="goal" if reason is None else reason)


def _val_check(val_binary: str, task: Task, plan: Sequence[str]) -> str | None:
    with tempfile.NamedTemporaryFile("w", suffix=".plan") as plan_file:
        plan_file.write(format_plan(plan))
        plan_file.flush()
        proc = subprocess.run(
            [val_binary, task.domain_file, task.problem_file, plan_file.name], capture_output=True, text=True
        )
    return None if proc.returncode == 0 and "Plan valid" in proc.stdout else "VAL rejected the plan"


def _record(result: DecodeResult, fingerprint: str) -> dict:
    record = dataclasses.asdict(result)
    record["plan_length"] = len(result.plan)
    record["fingerprint"] = fingerprint
    return {key: record[key] for key in RESULT_FIELDS}


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


def _content(path: pathlib.Path) -> bytes:
    """A file's bytes; an unreadable file fingerprints as empty and fails later as that instance."""
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _decisive_bytes(path: pathlib.Path) -> bytes:
    """A run file's bytes as far as decoding goes: a config without its seed (the seed only trains) and its
    selection menu (it only chooses the settings that the config then holds)."""
    if path.name != CONFIG_FILE:
        return path.read_bytes()
    try:
        config = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        config = None
    if not isinstance(config, dict):
        return path.read_bytes()  # load_run refuses it with one line
    config.pop("seed", None)
    config.pop("selection", None)
    decode = config.get("decode")
    for added in ("estimate_helpful_only", "prune_symmetric", "preferred_boost"):
        # added after runs were stored: at its default their records keep their key (compared as JSON: 0 is no False)
        default = json.dumps(getattr(DecodeConfig, added))
        if isinstance(decode, dict) and added in decode and json.dumps(decode[added]) == default:
            del decode[added]
    return json.dumps(config, sort_keys=True).encode()


def run_fingerprint(workdir: pathlib.Path, settings: DecodeConfig, member_dirs: Sequence[str] = ()) -> str:
    """What a run's results depend on besides the problem: its model files (with an ensemble's
    `ensemble.json` and members below `workdir`; `member_dirs` elsewhere are hashed too) and decoding settings.
    Left out: evaluations, the records of how the run was trained (`NOT_READ_BY_DECODING`) and the seed."""
    return _digest(*_run_files(workdir, member_dirs), json.dumps(settings.identity()).encode())


def run_files_fingerprint(workdir: pathlib.Path) -> str:
    """What the plans of a run decoded with its own settings (those of its config.json) depend on besides the
    problem: its files alone, as `run_fingerprint` reads them."""
    return _digest(*_run_files(workdir, ()))


def _run_files(workdir: pathlib.Path, member_dirs: Sequence[str]) -> list[bytes]:
    """Each file of the run that decoding reads, named, as far as decoding goes (`_decisive_bytes`)."""
    workdir = workdir.resolve()
    elsewhere = {pathlib.Path(d).resolve() for d in member_dirs}
    named: dict[pathlib.PurePath, pathlib.Path] = {}  # files below workdir by relative name, others by full path
    for folder in [workdir, *(d for d in elsewhere if not d.is_relative_to(workdir))]:
        for p in folder.rglob("*"):
            if p.is_file() and not NOT_READ_BY_DECODING & {*p.relative_to(folder).parts}:
                named[p.relative_to(workdir) if folder == workdir else p] = p
    return [f"{name}".encode() + _decisive_bytes(named[name]) for name in sorted(named)]


def _read_finished(path: pathlib.Path, fingerprints: dict[str, str]) -> dict[str, dict]:
    """Records of instances already evaluated with the same model, settings and problem file."""
    finished = {}
    for record in read_own_lines(path):  # torn lines of a killed run, and garbage, are left out
        key = record.get("problem_file") if isinstance(record, dict) else None
        if key in fingerprints and record.get("fingerprint") == fingerprints[key]:
            finished[key] = record
    return finished


def _still_holds(record: dict, domain_file: pathlib.Path, settings: DecodeConfig) -> bool:
    """Whether a stored record may be reused: a solved one only if its plan still replays to the goal within
    the horizon (a record edited after it was written, with its fingerprint kept, is decoded again)."""
    if record.get("solved") is not True:
        return True
    plan = record.get("plan")
    if not isinstance(plan, list):
        return False
    try:
        task = load_task(domain_file, record["problem_file"])
        simulate(task, plan, require_goal=True)
    except (InputError, KeyError, TypeError, AttributeError):
        return False
    return record.get("plan_length") == len(plan) <= settings.horizon(task) and record.get("outcome") == "goal"


def evaluate(
    workdir: str | os.PathLike,
    split: str,
    pddl_root: str | os.PathLike | None = None,
    use_val: bool = False,
    *,
    problem_files: Sequence[str | os.PathLike] | None = None,
    out_dir: str | os.PathLike | None = None,
    reuse: Sequence[pathlib.Path] = (),
    **decoding: Any,
) -> dict:
    """Decode every problem of `split` with the run in `workdir`; returns the summary.

    `decoding` overrides the run's decoding settings (`DecodeConfig` fields, e.g. `strategy`; None: the
    run's). `problem_files` restricts it to a subset of the split and `out_dir` moves the outputs
    (default `<workdir>/eval/<split>`): a shard of a distributed evaluation (experiments.distributed).
    `reuse`: other runs' `results.jsonl`, whose records with this run's fingerprints are taken, not decoded.
    """
    workdir = pathlib.Path(workdir)
    loaded = load_run(workdir)
    config = loaded.config
    pddl_root = pddl_root if pddl_root is not None else config.data.pddl_root
    settings = decode_config(config, **decoding)
    cost_to_go = cost_to_go_for(loaded, settings)
    val_binary = shutil.which("Validate") if use_val else None
    if use_val and val_binary is None:
        raise InputError(None, "--use_val asks for VAL, but no 'Validate' binary is on PATH")
    if split in ("", ".", "..") or pathlib.PurePath(split).name != split:
        raise InputError(split, "not a split name (a folder name under the domain, such as test-extrapolation)")
    if problem_files is None:  # an unknown split is refused before its folder is made
        problem_files = layout.problem_files(pddl_root, config.data.domain, split)
    files = [pathlib.Path(p).resolve() for p in problem_files]
    out_dir = pathlib.Path(out_dir) if out_dir is not None else workdir / "eval" / split
    check_writable(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(out_dir, f"an evaluation of {split}"):
        return _evaluate_locked(
            loaded, workdir, out_dir, split, pddl_root, settings, cost_to_go, val_binary, files, reuse
        )


def _evaluate_locked(
    loaded: LoadedModel,
    workdir: pathlib.Path,
    out_dir: pathlib.Path,
    split: str,
    pddl_root: str | os.PathLike,
    settings: DecodeConfig,
    cost_to_go: CostToGo | None,
    val_binary: str | None,
    problem_files: list[pathlib.Path],
    reuse: Sequence[pathlib.Path],
) -> dict:
    config = loaded.config
    progress_file = out_dir / "results.jsonl"
    domain_file = layout.domain_file(pddl_root, config.data.domain).resolve()
    check_domain(domain_file)  # a bad domain is one line for the whole split, not one per problem
    run = run_fingerprint(workdir, settings, loaded.member_dirs)
    domain_bytes = _content(domain_file)
    fingerprints = {str(p): _digest(run.encode(), domain_bytes, _content(p)) for p in problem_files}
    finished = _read_finished(progress_file, fingerprints)
    reused = 0
    for other in reuse:  # another seed's results of the same model and settings
        for key, record in _read_finished(other, fingerprints).items():
            reused += key not in finished
            finished.setdefault(key, record)
    finished = {key: r for key, r in finished.items() if _still_holds(r, domain_file, settings)}
    tasks, records = [], dict(finished)
    for problem_file in problem_files:
        if str(problem_file) in finished:
            continue
        try:
            tasks.append(load_task(domain_file, problem_file))
        except InputError as e:  # a broken problem is a failed instance, not a crashed run
            print(f"error: {e}", file=sys.stderr)
            records[str(problem_file)] = {
                "problem_file": str(problem_file),
                "problem": problem_file.stem,
                "num_objects": 0,
                "solved": False,
                "plan_length": 0,
                "steps": 0,
                "seconds": 0.0,
                "outcome": f"cannot load: {e.reason}",
                "plan": [],
                "fingerprint": fingerprints[str(problem_file)],
                "estimates_at_most_zero": 0,
            }
    logging.info(
        "%s: %d problems, %d already evaluated (%d of them by another seed with the same model)",
        split,
        len(problem_files),
        len(finished),
        reused,
    )

    stats = DecodeStats()
    by_file = {task.problem_file: task for task in tasks}
    started = time.perf_counter()
    with (
        open_for_append(progress_file) as log,
        tqdm(total=len(tasks), desc=f"decode {split}", unit="problem") as bar,
    ):

        def on_result(result: DecodeResult) -> None:
            task = by_file[result.problem_file]
            record = _record(check_plan(task, result, settings, val_binary), fingerprints[task.problem_file])
            records[task.problem_file] = record
            log.write(json.dumps(record) + "\n")
            log.flush()
            bar.update()

        if tasks:
            decode(tasks, loaded.model, loaded.encoder, settings, on_result, stats, cost_to_go)
    elapsed = time.perf_counter() - started

    ordered = [records[str(p)] for p in problem_files]
    solved = [r for r in ordered if r["solved"]]
    summary = {
        "split": split,
        "domain": config.data.domain,
        "pddl_root": str(pddl_root),
        "problems": len(ordered),
        "solved": len(solved),
        "success_rate": len(solved) / len(ordered) if ordered else 0.0,
        "mean_plan_length": sum(r["plan_length"] for r in solved) / len(solved) if solved else None,
        "decode_seconds": elapsed,
        "results_of_another_seed": reused,
        "instances_per_second": len(tasks) / elapsed if tasks and elapsed > 0 else None,
        "time_breakdown": dataclasses.asdict(stats),
        "beam_width": settings.beam_width,
        "metric": settings.metric,
        "strategy": settings.strategy,
        "budget": settings.budget,
        "exploration": settings.exploration,
        "goal_agenda": settings.goal_agenda,
        "action_elimination": settings.action_elimination,
        "prune_dead_ends": settings.prune_dead_ends,
        "estimate_helpful_only": settings.estimate_helpful_only,
        "prune_symmetric": settings.prune_symmetric,
        "preferred_boost": settings.preferred_boost,
        "fingerprint": run,
    }
    write_text(progress_file, "".join(json.dumps(r) + "\n" for r in ordered))  # only the current records
    write_text(out_dir / "results.json", json.dumps(ordered, indent=1))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=RESULT_FIELDS)
    writer.writeheader()
    for record in ordered:
        writer.writerow({**record, "plan": " ".join(record["plan"])})
    write_text(out_dir / "results.csv", buffer.getvalue())
    write_text(out_dir / "summary.json", json.dumps(summary, indent=1))
    return summary


def plan_problem(
    workdir: str | os.PathLike,
    domain_file: str | os.PathLike,
    problem_file: str | os.PathLike,
    out: str | os.PathLike,
    **decoding: Any,
) -> DecodeResult:
    """Decode one problem with a trained run and write an IPC plan file if solved (`result.solved`);
    `decoding` overrides the run's decoding settings, as in `evaluate`."""
    out = pathlib.Path(out)
    if out.is_dir() or not out.parent.is_dir():
        raise InputError(out, "cannot write the plan here (a directory, or its folder does not exist)")
    check_writable(out.parent)
    result = decode_problem(workdir, domain_file, problem_file, **decoding)
    if result.solved:
        write_text(out, format_plan(result.plan))
    return result


def decode_problem(
    workdir: str | os.PathLike, domain_file: str | os.PathLike, problem_file: str | os.PathLike, **decoding: Any
) -> DecodeResult:
    """Decode one problem with a trained run; a plan that does not reach the goal is not solved (`check_plan`)."""
    loaded = load_run(workdir)
    task = load_task(domain_file, problem_file)
    if task.predicates != loaded.encoder.predicates:
        raise InputError(
            problem_file,
            f"a problem of domain '{task.domain_name}', not of the run's domain '{loaded.config.data.domain}'"
            " (its predicates differ)",
        )
    settings = decode_config(loaded.config, **decoding)
    decoded = decode([task], loaded.model, loaded.encoder, settings, cost_to_go=cost_to_go_for(loaded, settings))[0]
    return check_plan(task, decoded, settings)
