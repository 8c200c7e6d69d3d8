"""Scale-out: sweep runs and evaluation shards as Ray tasks (Ray is imported lazily, `pip install -e ".[ray]"`),
or evaluation shards as processes on this machine (`method/shards.py`, no Ray needed).

Only paths travel through the object store; every worker reads and writes a filesystem
that all nodes share (PDDL root, plans/datasets cache, sweep and run directories).
Resumability comes from the files, so a task retried after its worker died
(`max_retries`) skips what the killed attempt finished and nothing is duplicated.

A sharded evaluation's files are those of `method/shards.py`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

from statecentric_jax.errors import InputError
from statecentric_jax.method.shards import evaluate_sharded as evaluate_sharded_by
from statecentric_jax.method.shards import run_in_processes

MAX_RETRIES = 3  # a task whose worker died is rerun this often; it resumes from its files
CONNECT_TIMEOUT_S = 5.0


def init(address: str | None = None, num_cpus: int | None = None) -> None:
    """Connect to a Ray cluster (`auto`, `host:port`) or start a local one (None); one clear error if unreachable.

    A `host:port` is probed with a plain TCP connection first: `ray.init` itself keeps retrying
    an address nobody listens on for a long time.
    """
    import ray

    if address not in (None, "auto", "local") and not address.startswith("ray://"):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise InputError(None, f"--ray_address must be auto or host:port, not {address!r}")
        try:
            socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as e:
            raise InputError(None, f"cannot reach the Ray cluster at {address}: {e.strerror or e}") from None
    if ray.is_initialized():
        return
    try:
        ray.init(address=address, num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    except ConnectionError as e:
        raise InputError(None, f"cannot reach the Ray cluster at {address}: {e}") from None


def resources() -> dict:
    """Per-task resource requests: one CPU, and a quarter GPU when the cluster has GPUs."""
    import ray

    return {"num_cpus": 1, "num_gpus": 0.25 if ray.cluster_resources().get("GPU", 0) else 0}


def run_tasks(fn: Callable, calls: dict[str, tuple], on_done: Callable[[str, object, str | None], None]) -> None:
    """Run `fn(*args)` as one Ray task per key; `on_done(key, value, error)` as each finishes."""
    import ray

    remote = ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False, **resources())(fn)
    refs = {remote.remote(*args): key for key, args in calls.items()}
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            try:
                on_done(refs[ref], ray.get(ref), None)
            except Exception as e:  # a task failed after its retries: report, keep the rest going
                cause = getattr(e, "cause", None) or e
                on_done(refs[ref], None, f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1:]}")


def evaluate_sharded(
    workdir: str | os.PathLike,
    split: str,
    shards: int,
    pddl_root: str | os.PathLike | None = None,
    address: str | None = None,
    backend: str = "ray",
    out_dir: str | os.PathLike | None = None,
    **kwargs,
) -> dict:
    """`evaluation.evaluate` with the split's problems dealt into `shards` Ray tasks (`backend="ray"`) or processes
    on this machine (`"processes"`), merged into the same outputs (`method/shards.py`)."""
    if backend == "ray":
        init(address)
    run = run_tasks if backend == "ray" else run_in_processes
    return evaluate_sharded_by(workdir, split, shards, pddl_root, out_dir, run, **kwargs)
