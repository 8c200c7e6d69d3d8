"""Evaluation shards: a split's problems dealt into shards, each decoded by `evaluation.evaluate` into its own
folder, then merged into the outputs of one evaluation. The shards run as processes on this machine
(`run_in_processes`) or as any runner with its signature (Ray tasks: `experiments/distributed.py`).

On disk, a sharded evaluation writes each shard to `<out>/shards/<k>-of-<n>/` (the layout of
`evaluation.evaluate`; `<out>` is `<workdir>/eval/<split>` unless `out_dir` names another), then merges
the shard records into `<out>/results.jsonl` and writes `results.json`, `results.csv` and `summary.json`
there exactly as a local evaluation does (plus `shards` and the shards' summed `time_breakdown`).
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import pathlib
import signal
import time
from collections.abc import Callable, Sequence

from statecentric_jax.atomic import open_for_append, write_text
from statecentric_jax.errors import InputError
from statecentric_jax.learning.train import load_model
from statecentric_jax.method import evaluation
from statecentric_jax.problems import layout

Runner = Callable[[Callable, dict[str, tuple], Callable[[str, object, str | None], None]], None]
"""Runs `fn(*args)` once per key of `calls`, and `on_done(key, value, error)` as each ends."""


def run_in_processes(fn: Callable, calls: dict[str, tuple], on_done: Callable[[str, object, str | None], None]) -> None:
    """A `Runner` on this machine: `fn(*args)` in one spawned process per key, all at once; a process that dies
    (killed for memory, say) is its key's error, and the others go on. Interrupted, it kills its processes."""
    context = multiprocessing.get_context("spawn")
    processes, waiting = {}, {}
    try:
        for key, args in calls.items():
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=_call_and_send, args=(sender, fn, args))
            process.start()
            processes[key] = process  # started: joined below whatever happens
            sender.close()
            waiting[key] = receiver
        while waiting:
            ready = multiprocessing.connection.wait(list(waiting.values()))
            for key in [k for k, receiver in waiting.items() if receiver in ready]:
                try:
                    value, error = waiting.pop(key).recv()
                except EOFError:  # it ended without an answer
                    processes[key].join()
                    value, error = None, f"its process ended with exit code {processes[key].exitcode}"
                on_done(key, value, error)
    finally:
        for process in processes.values():
            if process.is_alive():
                process.kill()
            process.join()


def run_all(
    fn: Callable, calls: dict[str, tuple], where: str | os.PathLike, what: str, run: Runner = run_in_processes
) -> dict[str, object]:
    """`run` on every call, its values by key; any call that failed is one InputError for `where`, naming `what`."""
    values: dict[str, object] = {}
    failed: dict[str, str] = {}

    def on_done(key: str, value: object, error: str | None) -> None:
        if error is None:
            values[key] = value
        else:
            failed[key] = error

    run(fn, calls, on_done)
    if failed:
        raise InputError(where, f"{what} failed: {failed}")
    return values


def _call_and_send(sender: multiprocessing.connection.Connection, fn: Callable, args: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops its processes
    try:
        sender.send((fn(*args), None))
    except InputError as e:
        sender.send((None, str(e)))
    except Exception as e:
        sender.send((None, f"{type(e).__name__}: {e}"))


def shard_dir(out_dir: pathlib.Path, shard: int, shards: int) -> pathlib.Path:
    return out_dir / "shards" / f"{shard}-of-{shards}"


def evaluate_shard(workdir: str, split: str, pddl_root: str | None, files: list[str], out: str, kwargs: dict) -> dict:
    return evaluation.evaluate(workdir, split, pddl_root, problem_files=files, out_dir=out, **kwargs)


def evaluate_sharded(
    workdir: str | os.PathLike,
    split: str,
    shards: int,
    pddl_root: str | os.PathLike | None = None,
    out_dir: str | os.PathLike | None = None,
    run: Runner = run_in_processes,
    **kwargs,
) -> dict:
    """`evaluation.evaluate` with the split's problems dealt into `shards` calls of `run`, merged into the same
    outputs (in `out_dir`, as `evaluation.evaluate`'s)."""
    if shards < 1:
        raise InputError(None, f"--shards must be at least 1, not {shards}")
    workdir = pathlib.Path(workdir).resolve()
    out = pathlib.Path(out_dir).resolve() if out_dir is not None else workdir / "eval" / split
    config = load_model(workdir).config
    root = str(pddl_root if pddl_root is not None else config.data.pddl_root)
    files = [str(p) for p in layout.problem_files(root, config.data.domain, split)]
    calls = {
        str(k): (str(workdir), split, root, files[k::shards], str(shard_dir(out, k, shards)), kwargs)
        for k in range(shards)
        if files[k::shards]
    }
    started = time.perf_counter()
    summaries = run_all(evaluate_shard, calls, workdir, "evaluation shard(s)", run)
    elapsed = time.perf_counter() - started
    shard_dirs = [pathlib.Path(args[4]) for args in calls.values()]
    return _merge(workdir, split, root, out, shard_dirs, summaries, elapsed, kwargs)


def _merge(
    workdir: pathlib.Path,
    split: str,
    root: str,
    out_dir: pathlib.Path,
    dirs: Sequence[pathlib.Path],
    summaries: dict,
    elapsed: float,
    kwargs: dict,
) -> dict:
    """Shard records into the split's results.jsonl, then the local evaluation writes the outputs (decodes nothing;
    a record appended twice is read once, keyed by problem file)."""
    with open_for_append(out_dir / "results.jsonl") as log:
        for shard in dirs:  # a shard's results.json holds each of its problems once, with its fingerprint
            for record in json.loads((shard / "results.json").read_text(encoding="utf-8")):
                log.write(json.dumps(record) + "\n")
    summary = evaluation.evaluate(workdir, split, root, out_dir=out_dir, **kwargs)
    decoded = sum(s["problems"] for s in summaries.values())
    breakdown = [s["time_breakdown"] for s in summaries.values()]
    summary.update(
        decode_seconds=elapsed,
        instances_per_second=decoded / elapsed if decoded and elapsed > 0 else None,
        time_breakdown={k: sum(b[k] for b in breakdown) for k in (breakdown[0] if breakdown else {})},
        shards=len(dirs),
    )
    write_text(out_dir / "summary.json", json.dumps(summary, indent=1))
    return summary
