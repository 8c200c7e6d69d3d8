"""Search throughput: expansions per second and time to solve, ours against Fast Downward, per problem.

    python -m benchmarks.search_speed --workdir=runs/search-speed --pddl_root=<paper splits> \
        --planners=ours,lama_first,gbfs_ff

Problems: `--set=speed` (default), a fixed set of our own larger problems (Logistics up to 6 cities
and 24 packages, Blocks, VisitAll), or `--set=own-large`, all of them (every split of
`benchmarks/own_problems.py` but `medium`: 64 Blocks, 14 Gripper, 12 VisitAll, 30 Logistics), written
seeded under `<workdir>/problems/<domain>/<split>/` from the generator specs of
`benchmarks/own_problems.py` (plus the few sizes named here); with `--ipc_root=<a
benchmark in IPC layout>` also our own problems for five of its domain files (blocksworld, ferry,
miconic, rovers, satellite), larger than its training problems (`generators.ipc_*`; never its test
problems); or
`--problems=<domain>:<problem.pddl>,...` with `--domain_files=<domain>:<domain.pddl>,...`.

Ours (`ours`): the run of `--config` (`{domain}` is replaced; default the per-domain `configs/<domain>_best.py`;
`configs/recommended.py` selects its settings per domain first, into `run/` there), trained once with seed
`--seed` on `--pddl_root` into `<workdir>/runs/<domain>/` (reused; or `--run=<domain>:<workdir>,...`); for
the domains of `--ipc_root`, the recommended recipe with selection, on that domain's training problems only
(`<workdir>/runs/<domain>/run/`). Each problem is decoded alone,
in a fresh process pinned to `--cores` cores with every thread count at one, under
`decode.time_limit=--time_limit`; `--decode=name=value,...` overrides decoding settings (a row per
setting is a run per value). It reports
expansions and generated nodes per second, the seconds to solve (wall clock, and the process's CPU
time, which a loaded machine changes less), the peak resident memory of that process and the bytes
per generated node (the peak less the memory before decoding, over the generated nodes), and where
the time went (`DecodeStats`).

Fast Downward (`gbfs_ff`: `eager_greedy([ff()])`; `lama_first`: the `lama-first` alias), the same problems,
the same time limit, one process each: the wall-clock seconds of the whole driver call (translation
included), and expansions per second of search time from its log.

The median of ours' time over LAMA-first's counts a problem ours fails and LAMA-first solves as infinitely
slower, one only ours solves as 0, and leaves out those neither solves. The plans' sha256 over the problems
(`benchmarks.common.plans_digest`) is printed for ours, so that a pure speed change can show the same plans.
Each planner's record of each problem is appended to `<workdir>/results.jsonl` when it finishes, and a rerun
with the same flags reuses it (`Records`): an interrupted run resumes per problem. It never plans for a test
split of `--pddl_root` or a test problem of `--ipc_root`.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import json
import math
import multiprocessing
import os
import pathlib
import re
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import psutil
from absl import flags

from benchmarks.common import load_line, plans_digest, print_columns, print_header
from benchmarks.own_problems import OWN_PROBLEMS, write_own_problems
from statecentric_jax import config as config_lib
from statecentric_jax.atomic import open_for_append, read_own_lines, write_text
from statecentric_jax.cli import run_main
from statecentric_jax.errors import InputError
from statecentric_jax.experiments import sweep
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.learning.train import CONFIG_FILE
from statecentric_jax.method import pipeline, selection
from statecentric_jax.method.evaluation import check_plan, cost_to_go_for, run_fingerprint
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import fast_downward, generators
from statecentric_jax.problems.domains import domain_text
from statecentric_jax.search.base import decode_config
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import DecodeStats

_WORKDIR = flags.DEFINE_string("workdir", "runs/search-speed", "Trained runs, written problems and results.jsonl.")
_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root whose train/validation splits ours trains on.")
_CONFIG = flags.DEFINE_string(
    "config", "configs/{domain}_best.py", "Ours: the config file to train ({domain} is replaced by the domain)."
)
_SEED = flags.DEFINE_integer("seed", 13, "Ours: the training seed.")
_RUN = flags.DEFINE_list("run", [], "Ours: <domain>:<trained run> pairs to use instead of training.")
_SET = flags.DEFINE_string("set", "speed", "A named fixed set of our own problems (see SETS).")
_PROBLEMS = flags.DEFINE_list("problems", [], "<domain>:<problem.pddl> pairs instead of --set.")
_DOMAINS = flags.DEFINE_list("domains", [], "Only these domains of --set (default: all of them).")
_DOMAIN_FILES = flags.DEFINE_list("domain_files", [], "<domain>:<domain.pddl> pairs, for --problems.")
_PLANNERS = flags.DEFINE_list("planners", ["ours", "lama_first", "gbfs_ff"], "Planners: ours, lama_first, gbfs_ff.")
_TIME_LIMIT = flags.DEFINE_float("time_limit", 300.0, "Seconds per problem and planner.", lower_bound=1)
_MEMORY_LIMIT = flags.DEFINE_integer("memory_limit_mb", 8000, "Memory per problem and planner (MB).", lower_bound=1)
_DECODE = flags.DEFINE_list("decode", [], "Ours: decoding settings name=value (DecodeConfig fields).")
_IPC_ROOT = flags.DEFINE_string(
    "ipc_root",
    "",
    "A benchmark in IPC layout: our problems for its blocksworld, ferry, miconic, rovers and satellite join --set.",
)
_CORES = flags.DEFINE_integer("cores", 1, "Ours: cores the decoding process may run on (0: all).", lower_bound=0)

FD_SEARCHES = {"gbfs_ff": fast_downward.GBFS_FF, "lama_first": fast_downward.LAMA_FIRST}
PLANNERS = ("ours", *FD_SEARCHES)
# Our own problems by name: (split of benchmarks/own_problems.py, its index) or (generator, arguments).
SETS: dict[str, dict[str, list[Any]]] = {
    "speed": {
        "logistics": [
            ("large", 0),  # 6 cities, 18 packages
            ("logistics", dict(cities=6, locations_per_city=2, packages=24, airplanes=2, goals=22, seed=1)),
            ("large", 2),  # 8 cities, 24 packages
        ],
        "blocks": [("large", 0), ("large", 6)],  # 20 and 34 blocks
        "visitall": [("large", 0), ("large", 4)],  # 14 x 14 and 16 x 16
    },
}
# `own-large`: every problem of our own at larger than the paper's sizes (every split of
# benchmarks/own_problems.py but `medium`), for the median over them.
SETS["own-large"] = {
    domain: [
        (split, index)
        for split, domains in OWN_PROBLEMS.items()
        if split != "medium"
        for index in range(len(domains.get(domain, [])))
    ]
    for domain in ("blocks", "gripper", "visitall", "logistics")
}
# Our own problems for domain files of an IPC-layout benchmark (--ipc_root): (generator, arguments).
IPC_SETS: dict[str, dict[str, list[Any]]] = {
    "speed": {
        "blocksworld": [("ipc_blocksworld", dict(n=n, seed=1)) for n in (60, 100)],
        "ferry": [("ipc_ferry", dict(cars=c, locations=c // 2, seed=1)) for c in (40, 100)],
        "miconic": [("ipc_miconic", dict(passengers=p, floors=f, seed=1)) for p, f in ((60, 80), (100, 201))],
        "rovers": [
            ("ipc_rovers", dict(rovers=r, waypoints=w, cameras=r, objectives=o, seed=1))
            for r, w, o in ((6, 20, 15), (8, 40, 20))
        ],
        "satellite": [
            ("ipc_satellite", dict(satellites=s, instruments=2 * s, modes=3, directions=s, seed=1)) for s in (15, 20)
        ],
    },
}
THREADS_ONE = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}
STATS_PHASES = ("successors", "embedding", "cost_to_go", "distances", "model", "model_wait", "strategy")


def fixed_set(name: str, root: pathlib.Path) -> list[tuple[str, pathlib.Path, pathlib.Path]]:
    """The named set's problems as (domain, domain file, problem file), written (deterministically) under root;
    with --ipc_root, also those of its domain files."""
    if name not in SETS:
        raise InputError("--set", f"unknown set '{name}' (use {', '.join(SETS)})")
    problems = []
    for domain, entries in SETS[name].items():
        (root / domain).mkdir(parents=True, exist_ok=True)
        write_text(root / domain / "domain.pddl", domain_text(domain))
        for entry in entries:
            if entry[0] in OWN_PROBLEMS:
                split, index = entry
                write_own_problems(root, domain, split)
                problem = root / domain / split / f"{domain}-{split}-{index:02d}.pddl"
            else:
                problem = _generated(root / domain / name, domain, *entry)
            problems.append((domain, root / domain / "domain.pddl", problem))
    if _IPC_ROOT.value:
        for domain, entries in IPC_SETS.get(name, {}).items():
            domain_file = pathlib.Path(_IPC_ROOT.value) / domain / "domain.pddl"
            if not domain_file.is_file():
                raise InputError("--ipc_root", f"{domain_file}: no such domain file")
            problems += [(domain, domain_file, _generated(root / domain / name, domain, *entry)) for entry in entries]
    return problems


def _generated(folder: pathlib.Path, domain: str, generator: str, arguments: dict[str, Any]) -> pathlib.Path:
    stem = "-".join(f"{k}{v}" for k, v in arguments.items() if k != "locations_per_city")
    problem = folder / f"{domain}-{stem}.pddl"
    folder.mkdir(parents=True, exist_ok=True)
    write_text(problem, getattr(generators, generator)(**arguments, name=problem.stem))
    return problem


def named_problems() -> list[tuple[str, pathlib.Path, pathlib.Path]]:
    """--problems with --domain_files, or the --set written under the workdir."""
    if not _PROBLEMS.value:
        problems = fixed_set(_SET.value, pathlib.Path(_WORKDIR.value) / "problems")
        unknown = sorted(set(_DOMAINS.value) - {domain for domain, _, _ in problems})
        if unknown:
            raise InputError("--domains", f"not in --set={_SET.value}: {', '.join(unknown)}")
        return [problem for problem in problems if not _DOMAINS.value or problem[0] in _DOMAINS.value]
    domain_files = dict(_pair("--domain_files", item) for item in _DOMAIN_FILES.value)
    problems = []
    for item in _PROBLEMS.value:
        domain, problem = _pair("--problems", item)
        if domain not in domain_files:
            raise InputError("--domain_files", f"no domain file for '{domain}'")
        problems.append((domain, pathlib.Path(domain_files[domain]), pathlib.Path(problem)))
    return problems


def _pair(flag: str, item: str) -> tuple[str, str]:
    key, sep, value = item.partition(":")
    if not sep or not key or not value:
        raise InputError(flag, f"'{item}' is not <domain>:<path>")
    return key, value


def decode_overrides() -> dict[str, Any]:
    """--decode as DecodeConfig overrides (values parsed as JSON where they parse: numbers, true/false)."""
    overrides: dict[str, Any] = {}
    for item in _DECODE.value:
        name, sep, value = item.partition("=")
        if not sep:
            raise InputError("--decode", f"'{item}' is not name=value")
        try:
            overrides[name] = json.loads(value)
        except json.JSONDecodeError:
            overrides[name] = value
    return overrides


def trained_run(domain: str) -> str:
    """The run ours decodes with: --run's, else one trained once into `<workdir>/runs/<domain>/`: the
    recommended recipe on the training problems of an --ipc_root domain, or --config on --pddl_root's (a
    config with a `selection` section, such as `configs/recommended.py`, selects per domain first, and its
    run is `run/` there)."""
    runs = dict(_pair("--run", item) for item in _RUN.value)
    if domain in runs:
        return runs[domain]
    workdir = pathlib.Path(_WORKDIR.value) / "runs" / domain
    if _IPC_ROOT.value and any(domain in domains for domains in IPC_SETS.values()):
        root, name, config = _IPC_ROOT.value, "recommended", config_lib.recommended()
        config.data.cache_dir = str(workdir / "cache")
    else:
        path = pathlib.Path(_CONFIG.value.format(domain=domain))
        if not path.is_file():
            raise InputError("--config", f"{path}: no such config file")
        root, name, config = _PDDL_ROOT.value, str(path), sweep.load_config(path, _PDDL_ROOT.value)
    config.seed = _SEED.value
    selects = "selection" in config
    run, other = (workdir / selection.RUN_DIR, workdir) if selects else (workdir, workdir / selection.RUN_DIR)
    if (other / CONFIG_FILE).exists():
        raise InputError("--workdir", f"{workdir} holds a run trained {'without' if selects else 'with'} selection")
    if not (run / CONFIG_FILE).exists():
        print(f"training {domain} ({name}, seed {_SEED.value}) into {workdir}", flush=True)
        if selects:
            selection.train_domain(root, domain, workdir, config)
        else:
            pipeline.train_from_config(config, workdir)
    return str(run)


def peak_resident_bytes() -> int:
    """This process's peak resident memory (VmHWM). Not `ru_maxrss`: Linux keeps that across exec, so a process
    spawned by a larger one reports its parent's peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # no procfs: may include the parent's


def decode_alone(
    run: str, domain_file: str, problem_file: str, overrides: dict[str, Any], cores: int
) -> dict[str, Any]:
    """One problem decoded by ours in this (fresh) process: a record of its checked plan, throughput,
    DecodeStats and memory."""
    if cores:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])
    loaded = load_run(run)
    settings = decode_config(loaded.config, **overrides)
    task = load_task(domain_file, problem_file)
    before = psutil.Process().memory_info().rss
    stats = DecodeStats()
    start, cpu_start = time.perf_counter(), time.process_time()
    cost_to_go = cost_to_go_for(loaded, settings)
    result = decode([task], loaded.model, loaded.encoder, settings, stats=stats, cost_to_go=cost_to_go)[0]
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    peak = peak_resident_bytes()
    result = check_plan(task, result, settings)
    return {
        "solved": result.solved,
        "outcome": result.outcome,
        "plan_length": len(result.plan),
        "plan": result.plan,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "expanded": stats.expanded,
        "generated": stats.generated,
        "peak_bytes": peak,
        "bytes_per_node": (peak - before) / max(stats.generated, 1),
        "phases": {name: getattr(stats, name) for name in STATS_PHASES},
    }


class Records:
    """`<workdir>/results.jsonl`: one record per planner and problem, appended as each finishes, so that an
    interrupted run resumes per problem. A record is reused when its key matches: the planner, the
    problem's and its domain's text, the limits, and for ours the run, its model files and the decoding
    settings."""

    def __init__(self, workdir: pathlib.Path, limits: dict[str, float]):
        self.path, self.limits = workdir / "results.jsonl", limits
        self.path.parent.mkdir(parents=True, exist_ok=True)  # --problems writes nothing else there
        self.done = {r["key"]: r for r in read_own_lines(self.path) if isinstance(r, dict) and "key" in r}

    def key(self, planner: str, domain_file: pathlib.Path, problem: pathlib.Path, **settings: Any) -> str:
        digest = hashlib.sha256(domain_file.read_bytes() + b"\0" + problem.read_bytes()).hexdigest()[:16]
        return json.dumps([planner, str(problem), digest, self.limits, settings], sort_keys=True)

    def add(self, record: dict[str, Any]) -> dict[str, Any]:
        record = {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **record}
        with open_for_append(self.path) as f:
            f.write(json.dumps(record) + "\n")
        self.done[record["key"]] = record
        return record

    def take(self, key: str, plan: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The record of `key`: the earlier one, else the one `plan()` makes now (appended, and a line printed)."""
        if key not in self.done:
            record = self.add({"key": key, **plan()})
            outcome = f"{record['outcome']}, {record['seconds']:.1f} s"
            print(f"{record['planner']} {pathlib.Path(record['problem']).stem}: {outcome}; {load_line()}", flush=True)
        return self.done[key]


def model_fingerprint(run: str, overrides: dict[str, Any]) -> str:
    """What the run's plans depend on (`evaluation.run_fingerprint`: its model files and decoding settings)."""
    loaded = load_run(run)
    return run_fingerprint(pathlib.Path(run), decode_config(loaded.config, **overrides), loaded.member_dirs)


def ours(problems: Sequence[tuple[str, pathlib.Path, pathlib.Path]], records: Records) -> list[dict[str, Any]]:
    """Each problem decoded alone, in a fresh process with every thread count at one (or its earlier record)."""
    overrides = {"time_limit": _TIME_LIMIT.value, "memory_limit_mb": _MEMORY_LIMIT.value, **decode_overrides()}
    runs = {domain: trained_run(domain) for domain in dict.fromkeys(d for d, _, _ in problems)}
    models = {domain: model_fingerprint(run, overrides) for domain, run in runs.items()}  # a run trained again: new
    os.environ.update(THREADS_ONE)  # read by the fresh processes' XGBoost, BLAS and XLA at start-up
    context = multiprocessing.get_context("spawn")

    def alone(domain: str, domain_file: pathlib.Path, problem: pathlib.Path) -> dict[str, Any]:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as process:
            args = (runs[domain], str(domain_file), str(problem), overrides, _CORES.value)
            record = process.submit(decode_alone, *args).result()
        return {"planner": "ours", "problem": str(problem), "decode": overrides, **record}

    out = []
    for domain, domain_file, problem in problems:
        settings = {"run": runs[domain], "model": models[domain], "decode": overrides, "cores": _CORES.value}
        key = records.key("ours", domain_file, problem, **settings)
        out.append(records.take(key, functools.partial(alone, domain, domain_file, problem)))
    return out


def fast_downward_rows(
    planner: str, problems: Sequence[tuple[str, pathlib.Path, pathlib.Path]], records: Records
) -> list[dict[str, Any]]:
    """One Fast Downward configuration on each problem (or its earlier record)."""
    return [
        records.take(
            records.key(planner, domain_file, problem),
            functools.partial(fast_downward_row, planner, domain_file, problem),
        )
        for _, domain_file, problem in problems
    ]


def fast_downward_row(planner: str, domain_file: pathlib.Path, problem: pathlib.Path) -> dict[str, Any]:
    """One Fast Downward configuration on one problem: wall-clock seconds, expansions and search time."""
    config = fast_downward.SearchConfig(FD_SEARCHES[planner], _TIME_LIMIT.value)
    start = time.perf_counter()
    tried, plan, log = fast_downward.attempt(
        str(domain_file.resolve()), str(problem.resolve()), config, _MEMORY_LIMIT.value
    )
    seconds = time.perf_counter() - start
    expanded = re.findall(r"Expanded (\d+) state", log)
    search = re.findall(r"Search time: ([\d.]+)s", log)
    return {
        "planner": planner,
        "problem": str(problem),
        "solved": plan is not None,
        "outcome": tried.status,
        "plan_length": len(plan) if plan is not None else None,
        "seconds": seconds,
        "expanded": int(expanded[-1]) if expanded else None,
        "search_seconds": float(search[-1]) if search else None,
    }


def _rate(count: int | None, seconds: float | None) -> str:
    return f"{count / seconds:,.0f}" if count is not None and seconds else "-"


def time_ratio(ours_record: dict[str, Any], lama_record: dict[str, Any]) -> float:
    """Ours' time over LAMA-first's; infinite where ours fails and LAMA-first solves, 0 where only ours solves,
    so that a median over problems counts a failure as slower than any time."""
    if not ours_record["solved"]:
        return math.inf if lama_record["solved"] else math.nan
    return ours_record["seconds"] / lama_record["seconds"] if lama_record["solved"] else 0.0


def print_tables(records: Sequence[dict[str, Any]], problems: Sequence[tuple[str, pathlib.Path, pathlib.Path]]) -> None:
    by = {(r["planner"], r["problem"]): r for r in records}
    planners = [p for p in PLANNERS if p in _PLANNERS.value]
    columns = ["problem"]
    for planner in planners:
        columns += [f"{planner}: solved, s", f"{planner}: expansions/s"]
    if "ours" in planners:
        columns += ["ours: CPU s, expansions/CPU s", "ours: expansions, generated/s", "ours: peak MB, bytes/node"]
    if "lama_first" in planners and "ours" in planners:
        columns += ["ours / LAMA-first time"]
    print_columns(columns)
    for domain, _, problem in problems:
        row = [f"{domain} {problem.stem}"]
        for planner in planners:
            r = by[(planner, str(problem))]
            seconds = r["search_seconds"] if planner != "ours" else r["seconds"]
            row += [f"{'yes' if r['solved'] else r['outcome']}, {r['seconds']:.1f}", _rate(r["expanded"], seconds)]
        if "ours" in planners:
            r = by[("ours", str(problem))]
            row += [
                f"{r['cpu_seconds']:.1f}, {_rate(r['expanded'], r['cpu_seconds'])}",
                f"{r['expanded']:,}, {_rate(r['generated'], r['seconds'])}",
                f"{r['peak_bytes'] / 2**20:,.0f}, {r['bytes_per_node']:,.0f}",
            ]
            if "lama_first" in planners:
                row.append(f"{time_ratio(r, by[('lama_first', str(problem))]):.1f}x")
        print("| " + " | ".join(row) + " |")
    if "lama_first" in planners and "ours" in planners:
        domains = list(dict.fromkeys(domain for domain, _, _ in problems))
        for name in ["all", *domains] if len(domains) > 1 else ["all"]:
            group = [problem for domain, _, problem in problems if name in ("all", domain)]
            ratios = [time_ratio(by[("ours", str(p))], by[("lama_first", str(p))]) for p in group]
            decided = [ratio for ratio in ratios if not math.isnan(ratio)]  # neither solved: no ratio
            if decided:
                solved = sum(by[("ours", str(p))]["solved"] for p in group)
                print(
                    f"{name}: median ours / LAMA-first time over the {len(decided)} problems either solves: "
                    f"{statistics.median(decided):.1f}x (ours unsolved: infinite); ours solved {solved}/{len(group)}"
                )
    if "ours" in planners:
        ours_records = [by[("ours", str(problem))] for _, _, problem in problems]
        print("\nours, where the time went (s; the model runs in a thread of its own, beside successors and embedding)")
        print_columns(["problem", "total", *STATS_PHASES])
        for (domain, _, problem), r in zip(problems, ours_records):
            phases = [f"{r['phases'][name]:.1f}" for name in STATS_PHASES]
            print(f"| {domain} {problem.stem} | {r['seconds']:.1f} | " + " | ".join(phases) + " |")
        print(f"ours: plans sha256 {plans_digest(ours_records)}; decode {json.dumps(ours_records[0]['decode'])}")


def main(argv: Sequence[str]) -> None:
    del argv
    unknown = sorted(set(_PLANNERS.value) - set(PLANNERS))
    if unknown:
        raise InputError("--planners", f"unknown planner(s) {', '.join(unknown)} (use {', '.join(PLANNERS)})")
    problems = named_problems()
    print_header()
    print(f"{len(problems)} problems; {load_line()}", flush=True)
    done = Records(
        pathlib.Path(_WORKDIR.value), {"time_limit": _TIME_LIMIT.value, "memory_limit_mb": _MEMORY_LIMIT.value}
    )
    records = ours(problems, done) if "ours" in _PLANNERS.value else []
    for planner in FD_SEARCHES:
        if planner in _PLANNERS.value:
            records += fast_downward_rows(planner, problems, done)
    print_tables(records, problems)
    print(load_line())


if __name__ == "__main__":
    run_main(main)
