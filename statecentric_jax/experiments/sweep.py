"""Run many configurations (by default the 32 Table 1 columns x domains) as parallel processes or Ray tasks.

Local backend: each configuration runs `run_config` in its own process
(`python -m statecentric_jax.experiments.sweep_worker`), so a crash or a leak in one
cannot take the others down, into `<sweep_dir>/<name>/` with its output in
`<sweep_dir>/<name>/log.txt`. Ray backend (experiments.distributed): each
(configuration, seed) is one Ray task calling `run_config` with that seed; when
all seeds of a configuration are done, `run_config` with every seed (all skipped)
writes its `results.json`. A rerun skips configurations
whose `results.json` already holds every seed and split (and `run_experiment`
itself skips finished seeds and splits), so an interrupted sweep resumes.
Plans and datasets are prepared once per domain and encoding before any run
starts: parallel runs then only read the shared cache and never race to build it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import pathlib
import resource
import subprocess
import sys
import time
from collections.abc import Sequence

import ml_collections
from absl import logging
from tqdm import tqdm

from statecentric_jax import config as config_lib
from statecentric_jax.atomic import open_for_append, write_text
from statecentric_jax.cli import load_config_file
from statecentric_jax.embedding.config import ENCODINGS
from statecentric_jax.errors import InputError
from statecentric_jax.learning.config import MODEL_KINDS
from statecentric_jax.learning.transitions import MODES
from statecentric_jax.method import pipeline
from statecentric_jax.problems import layout

REPO = pathlib.Path(__file__).resolve().parents[2]
BACKENDS = ("local", "ray")
CONFIG_FILE = "sweep_config.json"  # the resolved configuration a run's worker reads
TABLE1_CONFIGS = tuple(
    f"{domain}_{encoding}_{kind}_{mode}"
    for domain in layout.DOMAINS
    for encoding in ENCODINGS
    for kind in MODEL_KINDS
    for mode in MODES
)
SWEEP_FILE = "sweep.json"
LOG_FILE = "log.txt"
REFRESH_SECONDS = 30.0  # how often the progress bar recounts finished summaries


@dataclasses.dataclass(frozen=True)
class Job:
    """One configuration of the sweep: its name (the run folder) and resolved config."""

    name: str
    path: pathlib.Path
    config: ml_collections.ConfigDict  # with absolute pddl_root and cache_dir

    def command(self, run_dir: pathlib.Path, seeds: Sequence[int]) -> list[str]:
        """The worker process for this configuration; writes the configuration it reads."""
        write_text(run_dir / CONFIG_FILE, self.config.to_json(indent=1))
        return [
            sys.executable,
            "-m",
            "statecentric_jax.experiments.sweep_worker",
            f"--config_json={run_dir / CONFIG_FILE}",
            f"--workdir={run_dir}",
            f"--seeds={','.join(str(s) for s in seeds)}",
        ]


@dataclasses.dataclass
class SweepResult:
    """What a sweep invocation did with each configuration."""

    finished: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)  # complete before this invocation
    failed: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> one-line reason
    wall_seconds: float = 0.0
    peak_rss_mb_children: float = 0.0


def config_path(name: str) -> pathlib.Path:
    """A config given as a name in `configs/` ("blocks_wl_xgb_delta") or as a path to a .py file."""
    path = pathlib.Path(name) if name.endswith(".py") else REPO / "configs" / f"{name}.py"
    if not path.is_file():
        raise InputError(path, "no such config file")
    return path


def load_config(
    path: pathlib.Path, pddl_root: str | None = None, cache_dir: str | None = None
) -> ml_collections.ConfigDict:
    """`get_config()` of a config file, with the data paths overridden and made absolute.

    Absolute paths keep the runs' recorded configs meaningful from any working directory.
    """
    config = load_config_file(path)
    config.data.pddl_root = os.path.abspath(pddl_root or config.data.pddl_root)
    config.data.cache_dir = os.path.abspath(cache_dir or config.data.cache_dir)
    config_lib.check(config)
    return config


def run_config(config_json: str | os.PathLike, run_dir: str | os.PathLike, seeds: Sequence[int]) -> dict:
    """Train and evaluate one configuration for `seeds` (skipping finished ones): the unit of work of both backends
    (the local worker process, `sweep_worker`, and a Ray task).

    Takes paths only, so a Ray task ships a few strings and the worker reads the shared filesystem.
    """
    stored = json.loads(pathlib.Path(config_json).read_text(encoding="utf-8"))
    config = ml_collections.ConfigDict(config_lib.with_defaults(stored))
    return pipeline.run_experiment(config, run_dir, seeds=seeds)


def _timed_run_config(*args) -> float:
    """`run_config` in a Ray task; returns its seconds (the per-task times benchmarks.scaleout reads)."""
    started = time.perf_counter()
    run_config(*args)
    return time.perf_counter() - started


def is_complete(run_dir: pathlib.Path, seeds: Sequence[int]) -> bool:
    """Whether the run's `results.json` has a success rate for every seed and evaluation split."""
    try:
        rates = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        return all(str(seed) in rates[split] for split in pipeline.EVALUATION_SPLITS for seed in seeds)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def count_summaries(sweep_dir: pathlib.Path, names: Sequence[str], seeds: Sequence[int]) -> int:
    """Finished evaluations (seed x split `summary.json` files) of the given configurations."""
    return sum(
        (sweep_dir / name / f"seed{seed}" / "eval" / split / "summary.json").is_file()
        for name in names
        for seed in seeds
        for split in pipeline.EVALUATION_SPLITS
    )


def thread_env(parallel: int) -> dict[str, str]:
    """Environment for one of `parallel` processes: an equal share of the cores for OpenMP (XGBoost's
    `n_jobs=0` follows OMP_NUM_THREADS) and passive waiting, so one busy core cannot stall the others
    (benchmarks/threads.py)."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // parallel)))
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def run_command(command: Sequence[str], log_path: pathlib.Path, env: dict[str, str] | None = None) -> int:
    """Run one configuration's process with stdout and stderr in its log; returns the exit code."""
    with open_for_append(log_path) as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        return subprocess.run(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        ).returncode


def _prepare(jobs: Sequence[Job], result: SweepResult, bar: tqdm) -> list[Job]:
    """Build plans and datasets once per (root, cache, domain, encoding); returns the jobs whose data is ready."""
    errors: dict[tuple, str | None] = {}  # data key -> None when prepared, else why it failed
    ready = []
    for job in jobs:
        key = (job.config.data.pddl_root, job.config.data.cache_dir, job.config.data.domain, job.config.data.encoding)
        if key not in errors:
            bar.write(f"preparing data: {job.config.data.domain} {job.config.data.encoding}")
            try:
                pipeline.prepare_data(job.config)
                errors[key] = None
            except InputError as e:
                errors[key] = f"data preparation failed: {e}"
        error = errors[key]
        if error is None:
            ready.append(job)
        else:
            result.failed[job.name] = error
            bar.write(f"{job.name}: FAILED, {error}")
            bar.update()
    return ready


def run_sweep(
    sweep_dir: str | os.PathLike,
    configs: Sequence[str] = TABLE1_CONFIGS,
    seeds: Sequence[int] = pipeline.SEEDS,
    parallel: int = 1,
    pddl_root: str | None = None,
    cache_dir: str | None = None,
    backend: str = "local",
    ray_address: str | None = None,
) -> SweepResult:
    """Run every configuration not yet complete, `parallel` at a time (local) or as Ray tasks (ray);
    record time and memory, and on Ray each task's seconds, in sweep.json."""
    if backend not in BACKENDS:
        raise InputError(None, f"--backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if parallel < 1:
        raise InputError(None, f"--parallel must be at least 1, not {parallel}")
    sweep_dir = pathlib.Path(sweep_dir)
    paths = [config_path(name) for name in configs]
    names = [path.stem for path in paths]
    if len(set(names)) != len(names):
        raise InputError(
            None, f"configurations with the same name: {', '.join(sorted(n for n in set(names) if names.count(n) > 1))}"
        )
    jobs = [Job(path.stem, path, load_config(path, pddl_root, cache_dir)) for path in paths]
    sweep_dir.mkdir(parents=True, exist_ok=True)
    started, result = time.perf_counter(), SweepResult()
    total = len(jobs) * len(seeds) * len(pipeline.EVALUATION_SPLITS)

    def status() -> str:
        return f"{count_summaries(sweep_dir, names, seeds)}/{total} seed-split evaluations"

    with tqdm(total=len(jobs), desc="sweep", unit="config") as bar:
        todo = []
        for job in jobs:
            if is_complete(sweep_dir / job.name, seeds):
                result.skipped.append(job.name)
                bar.update()
            else:
                todo.append(job)
        if backend == "ray":
            from statecentric_jax.experiments import distributed

            distributed.init(ray_address)  # an unreachable cluster fails before any data preparation
        todo = _prepare(todo, result, bar)
        bar.set_postfix_str(status())
        tasks: dict[str, float] = {}
        if backend == "ray":
            tasks = _run_ray(sweep_dir, todo, seeds, result, bar)
        else:
            _run_local(sweep_dir, todo, seeds, parallel, result, bar, status)
    result.wall_seconds = time.perf_counter() - started
    result.peak_rss_mb_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    _record(sweep_dir, result, names, seeds, parallel, backend, tasks)
    return result


def _run_ray(sweep_dir: pathlib.Path, jobs: Sequence[Job], seeds: Sequence[int], result: SweepResult, bar: tqdm):
    """One Ray task per (configuration, seed); returns each task's seconds, keyed "name/seed"."""
    from statecentric_jax.experiments import distributed

    calls = {}
    for job in jobs:
        run_dir = (sweep_dir / job.name).resolve()
        run_dir.mkdir(exist_ok=True)
        write_text(run_dir / CONFIG_FILE, job.config.to_json(indent=1))
        for seed in seeds:
            calls[f"{job.name}/{seed}"] = (str(run_dir / CONFIG_FILE), str(run_dir), [seed])
    left = {job.name: len(seeds) for job in jobs}
    errors: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}

    def on_done(key: str, value, error: str | None) -> None:
        name, seed = key.rsplit("/", 1)
        if error is None:
            seconds[key] = round(value, 3)
        else:
            errors.setdefault(name, []).append(f"seed {seed}: {error}")
        left[name] -= 1
        if left[name]:
            return
        if name in errors:
            result.failed[name] = "; ".join(errors[name])
            bar.write(f"{name}: FAILED, {result.failed[name]}")
        else:
            config_json, run_dir, _ = calls[key]
            run_config(config_json, run_dir, seeds)  # every seed done: writes results.json
            result.finished.append(name)
        bar.update()

    distributed.run_tasks(_timed_run_config, calls, on_done)
    return seconds


def _run_local(
    sweep_dir: pathlib.Path,
    todo: Sequence[Job],
    seeds: Sequence[int],
    parallel: int,
    result: SweepResult,
    bar: tqdm,
    status,
) -> None:
    """Each configuration in its own process, `parallel` at a time, sharing the cores (`thread_env`)."""
    env = thread_env(parallel)
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        running = {}
        for job in todo:
            run_dir = sweep_dir / job.name
            run_dir.mkdir(exist_ok=True)
            running[pool.submit(run_command, job.command(run_dir, seeds), run_dir / LOG_FILE, env)] = job
        pending = set(running)
        while pending:
            done, pending = concurrent.futures.wait(
                pending, timeout=REFRESH_SECONDS, return_when=concurrent.futures.FIRST_COMPLETED
            )
            bar.set_postfix_str(status(), refresh=False)
            for future in sorted(done, key=lambda f: running[f].name):
                job = running[future]
                code = future.result()
                if code == 0:
                    result.finished.append(job.name)
                else:
                    result.failed[job.name] = f"exit code {code}, see {sweep_dir / job.name / LOG_FILE}"
                    bar.write(f"{job.name}: FAILED, {result.failed[job.name]}")
                bar.update()
            bar.refresh()


def _record(
    sweep_dir: pathlib.Path,
    result: SweepResult,
    names: Sequence[str],
    seeds: Sequence[int],
    parallel: int,
    backend: str,
    task_seconds: dict[str, float],
) -> None:
    """Append this invocation to sweep.json (a resumed sweep keeps the times of earlier invocations)."""
    path = sweep_dir / SWEEP_FILE
    try:
        invocations = json.loads(path.read_text(encoding="utf-8"))["invocations"]
    except (OSError, ValueError, KeyError, TypeError):
        invocations = []
    invocations.append(
        {
            "configs": list(names),
            "seeds": list(seeds),
            "parallel": parallel,
            "backend": backend,
            "task_seconds": task_seconds,  # Ray: "<config>/<seed>" -> seconds of that task
            "wall_seconds": round(result.wall_seconds, 3),
            "peak_rss_mb_children": round(result.peak_rss_mb_children, 1),
            "peak_rss_mb_self": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "finished": result.finished,
            "skipped": result.skipped,
            "failed": result.failed,
        }
    )
    total = sum(i["wall_seconds"] for i in invocations)
    write_text(path, json.dumps({"total_wall_seconds": round(total, 3), "invocations": invocations}, indent=1) + "\n")
    logging.info(
        "sweep: %d finished, %d already complete, %d failed in %.0f s",
        len(result.finished),
        len(result.skipped),
        len(result.failed),
        result.wall_seconds,
    )
