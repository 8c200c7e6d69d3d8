"""Decoding speed: the vectorised lockstep decoder against two one-at-a-time references.

    python -m benchmarks.decode --pddl_root=<paper splits> --domains=visitall,blocks

For each domain, trains (once, cached in --workdir) the WL-XGB delta model of the
paper's Table 1 and decodes the extrapolation split with
(v) `decode`: all instances in lockstep, batched model, embedding and distance calls;
(s) `decode_sequential`, the fast sequential reference: one instance at a time, one
    model call per beam element, one embedding call per candidate (incremental WL);
(p) the paper-faithful reference: (s) with `paper_encoder`, wlplan embedding every
    candidate from scratch in its own call, as the paper's own code does.
(v) decodes the whole split and then the first --sequential_limit and --paper_limit
problems, the subsets (s) and (p) decode. All must return the same plans; the plans'
digest is printed so that reruns can be compared.

Fair timing: every decoder starts from a freshly loaded model, encoder and tasks, and
all run with the same threads: XGBoost's `nthread`, the OpenMP/BLAS thread counts and
XLA's intra-op threads are all --threads (the process re-executes itself once with
them in its environment, since XGBoost and XLA read them at start-up). The machine, the
load average before and after each domain, and the thread count are printed; with a
1-minute load average above --max_load per core it refuses to run (exit 2).
"""

from __future__ import annotations

import os
import pathlib
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from absl import flags

from benchmarks.common import load_line, machine_line, plans_digest, refuse_busy_machine
from statecentric_jax import config as config_lib
from statecentric_jax.cli import run_main
from statecentric_jax.learning.train import CONFIG_FILE, load_model
from statecentric_jax.learning.xgb import XGBModel
from statecentric_jax.method import pipeline
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout
from statecentric_jax.search.base import DecodeResult, decode_config
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import DecodeStats
from statecentric_jax.search.paper_reference import paper_encoder
from statecentric_jax.search.sequential import decode_sequential

_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root.")
_DOMAINS = flags.DEFINE_list("domains", ["visitall", "blocks"], "Domains to benchmark.")
_SPLIT = flags.DEFINE_string("split", "test-extrapolation", "Split to decode.")
_WORKDIR = flags.DEFINE_string("workdir", "runs/bench-decode", "Where the benchmark's models are trained (reused).")
_SEQUENTIAL_LIMIT = flags.DEFINE_integer(
    "sequential_limit", 0, "The fast sequential reference decodes the first N problems (0: all).", lower_bound=0
)
_PAPER_LIMIT = flags.DEFINE_integer(
    "paper_limit", 20, "The paper-faithful reference decodes the first N problems (0: all).", lower_bound=0
)
_THREADS = flags.DEFINE_integer(
    "threads", 1, "Threads for XGBoost, OpenMP, BLAS and XLA, for every decoder.", lower_bound=1
)
_MAX_LOAD = flags.DEFINE_float(
    "max_load", 0.5, "Refuse to run when the 1-minute load average exceeds this per core (0: no check).", lower_bound=0
)

DECODERS: dict[str, tuple[Callable[..., list[DecodeResult]], Callable[[Any], Any]]] = {
    # name: (decoder, the encoder it is given)
    "vectorised": (decode, lambda encoder: encoder),
    "sequential": (decode_sequential, lambda encoder: encoder),
    "paper-faithful": (decode_sequential, paper_encoder),
}


def _pin_threads(threads: int) -> None:
    """Re-execute this process once with every thread count fixed in its environment."""
    wanted = {name: str(threads) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    eigen = "true" if threads > 1 else "false"
    wanted["XLA_FLAGS"] = f"--xla_cpu_multi_thread_eigen={eigen} intra_op_parallelism_threads={threads}"
    if any(os.environ.get(name) != value for name, value in wanted.items()):
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, "-m", "benchmarks.decode", *sys.argv[1:]], {**os.environ, **wanted})


def _run(
    decoder: str, workdir: str, domain_file: str, problem_files: list[str]
) -> tuple[list[DecodeResult], DecodeStats]:
    """One decoder on freshly loaded model, encoder and tasks, so that no decoder sees another's caches."""
    loaded = load_model(workdir)
    assert isinstance(loaded.model, XGBModel)  # the benchmark's model is always XGBoost
    loaded.model.booster.set_param({"nthread": _THREADS.value})
    tasks = [load_task(domain_file, p) for p in problem_files]
    stats = DecodeStats()
    run, encoder = DECODERS[decoder]
    results = run(tasks, loaded.model, encoder(loaded.encoder), decode_config(loaded.config), stats=stats)
    return results, stats


def _row(name: str, n: int, stats: DecodeStats) -> str:
    parts = ", ".join(f"{k} {getattr(stats, k):.2f}" for k in ("model", "successors", "embedding", "distances"))
    return f"| {name} | {n} | {stats.total:.2f} | {n / stats.total:.2f} | {parts} |"


def _benchmark(domain: str) -> None:
    config = config_lib.table1(domain, "wl", "xgb", "delta")
    config.data.pddl_root = _PDDL_ROOT.value
    workdir = f"{_WORKDIR.value}/{pipeline.root_id(_PDDL_ROOT.value)}/{domain}_wl_xgb_delta"
    if not pathlib.Path(workdir, CONFIG_FILE).exists():
        start = time.perf_counter()
        pipeline.train_from_config(config, workdir)
        print(f"{domain}: trained in {time.perf_counter() - start:.1f} s")
    domain_file = str(layout.domain_file(_PDDL_ROOT.value, domain))
    files = [str(p) for p in layout.problem_files(_PDDL_ROOT.value, domain, _SPLIT.value)]
    print(f"\n{domain}/{_SPLIT.value}: {len(files)} problems; {load_line()}")
    vectorised = {len(files): _run("vectorised", workdir, domain_file, files)}
    whole, whole_stats = vectorised[len(files)]
    solved = sum(r.solved for r in whole)
    print(f"solved {solved} ({solved / len(files):.2f}); plans sha256 {plans_digest(whole)}")
    print("| decoder | problems | seconds | problems/s | seconds in model, successors, embedding, distances |")
    print("|---|---|---|---|---|")
    print(_row("vectorised, whole split", len(files), whole_stats), flush=True)
    ratios = []
    for reference, limit in (("sequential", _SEQUENTIAL_LIMIT.value), ("paper-faithful", _PAPER_LIMIT.value)):
        n = min(limit or len(files), len(files))
        if n not in vectorised:
            vectorised[n] = _run("vectorised", workdir, domain_file, files[:n])
            print(_row(f"vectorised, first {n}", n, vectorised[n][1]), flush=True)
        results, stats = _run(reference, workdir, domain_file, files[:n])
        print(_row(f"{reference}, first {n}", n, stats), flush=True)
        same = sum(a.plan == b.plan for a, b in zip(vectorised[n][0], results))
        ratios.append(f"{stats.total / vectorised[n][1].total:.1f}x over {reference} ({same}/{n} identical plans)")
    inner = whole_stats.embedding + whole_stats.model
    print(f"speed-up of the vectorised decoder on the same problems: {'; '.join(ratios)}")
    print(f"whole split total / (embedding + model): {whole_stats.total / inner:.2f}; {load_line()}")


def main(argv: Sequence[str]) -> None:
    del argv
    _pin_threads(_THREADS.value)
    refuse_busy_machine("--max_load", _MAX_LOAD.value)
    print(machine_line())
    print(f"command: {' '.join(sys.argv)}; threads {_THREADS.value}; {load_line()}")
    for domain in _DOMAINS.value:
        _benchmark(domain)


if __name__ == "__main__":
    run_main(main)
