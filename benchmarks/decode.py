"""Decoding speed: the sequential reference decoder vs the vectorised lockstep decoder.

    python -m benchmarks.decode --pddl_root=../shared/benchmarks/paper-splits

For each domain, trains (once, cached in --workdir) the WL-XGB delta model of the
paper's Table 1 and decodes the extrapolation split twice: (a) `decode_sequential`,
one instance at a time, one model call per beam element and one embedding call per
candidate; (b) `decode`, all instances in lockstep. Checks that both return the
same plans, and prints instances/s, the speed-up, and where the time went.
"""

import pathlib
import sys
import time

from absl import app, flags

from benchmarks.common import machine_line
from statecentric_jax import config as config_lib
from statecentric_jax.experiments import pipeline
from statecentric_jax.learning.train import CONFIG_FILE, load_model
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout
from statecentric_jax.search.base import decode_config
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import DecodeStats
from statecentric_jax.search.sequential import decode_sequential

_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root.")
_DOMAINS = flags.DEFINE_list("domains", ["visitall", "blocks"], "Domains to benchmark.")
_SPLIT = flags.DEFINE_string("split", "test-extrapolation", "Split to decode.")
_WORKDIR = flags.DEFINE_string("workdir", "runs/bench-decode", "Where the benchmark's models are trained (reused).")
_SEQUENTIAL_LIMIT = flags.DEFINE_integer(
    "sequential_limit",
    0,
    "Compare the decoders on the first N problems only (0: all); the whole split is still decoded by (b).",
)


def _row(name, n, stats):
    parts = ", ".join(f"{k} {getattr(stats, k):.2f}" for k in ("model", "successors", "embedding", "distances"))
    return f"| {name} | {n} | {stats.total:.2f} | {n / stats.total:.2f} | {parts} |"


def _fresh(workdir: str, domain_file, problem_files):
    """Model, encoder and tasks loaded anew, so neither decoder sees the other's caches."""
    loaded = load_model(workdir)
    return loaded, decode_config(loaded.config), [load_task(domain_file, p) for p in problem_files]


def main(argv):
    del argv
    print(machine_line())
    print(f"command: {' '.join(sys.argv)}")
    for domain in _DOMAINS.value:
        config = config_lib.table1(domain, "wl", "xgb", "delta")
        config.data.pddl_root = _PDDL_ROOT.value
        workdir = f"{_WORKDIR.value}/{pipeline.root_id(_PDDL_ROOT.value)}/{domain}_wl_xgb_delta"
        if not pathlib.Path(workdir, CONFIG_FILE).exists():
            start = time.perf_counter()
            pipeline.train_from_config(config, workdir)
            print(f"{domain}: trained in {time.perf_counter() - start:.1f} s")
        domain_file = layout.domain_file(_PDDL_ROOT.value, domain)
        problem_files = layout.problem_files(_PDDL_ROOT.value, domain, _SPLIT.value)

        loaded, settings, tasks = _fresh(workdir, domain_file, problem_files)
        whole = DecodeStats()
        batched = decode(tasks, loaded.model, loaded.encoder, settings, stats=whole)
        solved = sum(r.solved for r in batched)
        print(f"\n{domain}/{_SPLIT.value}: {len(tasks)} problems, solved {solved} ({solved / len(tasks):.2f})")
        print("| decoder | problems | seconds | problems/s | seconds in model, successors, embedding, distances |")
        print("|---|---|---|---|---|")
        print(_row("vectorised, whole split", len(tasks), whole), flush=True)

        n = _SEQUENTIAL_LIMIT.value or len(tasks)
        vectorised, sequential = DecodeStats(), DecodeStats()
        loaded, settings, tasks = _fresh(workdir, domain_file, problem_files)
        subset = decode(tasks[:n], loaded.model, loaded.encoder, settings, stats=vectorised)
        loaded, settings, tasks = _fresh(workdir, domain_file, problem_files)
        reference = decode_sequential(tasks[:n], loaded.model, loaded.encoder, settings, stats=sequential)
        same = sum(a.plan == b.plan for a, b in zip(subset, reference))
        print(_row(f"vectorised (b), first {n}", n, vectorised))
        print(_row(f"sequential (a), first {n}", n, sequential))
        inner = whole.embedding + whole.model
        print(
            f"identical plans (a) vs (b): {same}/{n}; speed-up (b)/(a) on the same {n} problems: "
            f"{sequential.total / vectorised.total:.1f}x;"
            f" whole split total / (embedding + model): {whole.total / inner:.2f}"
        )


if __name__ == "__main__":
    app.run(main)
