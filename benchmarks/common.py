"""What every benchmark prints first: the machine and the date, so figures can be placed; and its load.
Also the cost-to-go features the cost-to-go benchmarks read, and decoding a split of problems the way
the search benchmarks do (checked plans, never on a test split)."""

import datetime
import hashlib
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np
from absl import flags

from statecentric_jax.embedding.encoders import Encoder, Pair, TasksAndTrajectories, WLEncoder, WLSettings
from statecentric_jax.embedding.goal_paths import GoalPathEncoder
from statecentric_jax.errors import InputError
from statecentric_jax.learning.train import LoadedModel
from statecentric_jax.method.evaluation import check_plan
from statecentric_jax.planning.tasks import Task, load_task
from statecentric_jax.problems import layout
from statecentric_jax.search.base import DecodeConfig, DecodeResult, decode_config
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import CostToGo, DecodeStats

TEST_SPLITS = ("test-interpolation", "test-extrapolation")

flags.disclaim_key_flags()  # flags defined here belong to the benchmark that asks for them (its --help)


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    python = platform.python_version()
    return f"{platform.node()} | {cpu} | {os.cpu_count()} cores | Python {python} | {datetime.date.today()}"


def print_header(columns: Sequence[str] = ()) -> None:
    """The machine, the command line, and (given its columns) the header of the Markdown table that follows."""
    print(machine_line())
    print(f"command: {' '.join(sys.argv)}")
    if columns:
        print_columns(columns)


def print_columns(columns: Sequence[str]) -> None:
    """The header of a Markdown table."""
    print("| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")


def load_line() -> str:
    """The load averages over 1, 5 and 15 minutes, and the time: figures are only as good as that load."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} at {datetime.datetime.now():%H:%M:%S}"


def refuse_busy_machine(flag: str, max_per_core: float) -> None:
    """InputError when the 1-minute load average is above `max_per_core` x cores (0: no check)."""
    cores = os.cpu_count() or 1
    one = os.getloadavg()[0]
    if max_per_core > 0 and one > max_per_core * cores:
        raise InputError(
            flag,
            f"the 1-minute load average is {one:.2f}, above {max_per_core:g} per core x {cores} cores; "
            f"wait for a quiet machine, or pass {flag}=0 to measure anyway",
        )


def plans_digest(results: Sequence[DecodeResult] | Sequence[dict]) -> str:
    """A short sha256 of the results' plans (results or their records), in order: the same plans, the same
    digest (reruns, commits)."""
    plans = [r["plan"] if isinstance(r, dict) else r.plan for r in results]
    return hashlib.sha256(repr(plans).encode()).hexdigest()[:16]


def cost_to_go_features(
    run: LoadedModel, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None]
) -> np.ndarray:
    """The run's cost-to-go features of (task, state) pairs, embedded as decoding does (with their parents)."""
    assert run.cost_to_go is not None  # the benchmarks refuse a run without one
    embeddings = np.asarray(run.encoder.embed(pairs, parents), np.float32)
    return run.cost_to_go.embed(pairs, parents, embeddings)


def cost_to_go_of(
    run: LoadedModel, task: Task, states: Sequence[frozenset[str]], parents: Sequence[frozenset[str] | None]
) -> np.ndarray:
    """The run's cost-to-go of `task`'s `states`, as decoding reads it (never below zero)."""
    features = cost_to_go_features(run, [(task, state) for state in states], parents)
    goal = np.asarray(run.encoder.embed_goals([task]), np.float32)
    assert run.cost_to_go is not None
    return run.cost_to_go.estimate(features, np.repeat(goal, len(states), axis=0))


def parse_features(spec: str) -> WLSettings:
    """`<algorithm>:<graph>:<iterations>[:set]` (wlplan; multiset hash unless `:set`) as WL settings."""
    parts = spec.split(":")
    if len(parts) not in (3, 4) or not parts[2].isdigit() or parts[3:] not in ([], ["set"]):
        raise InputError("--features", f"'{spec}' is not <algorithm>:<graph>:<iterations>[:set] or paths:<length>")
    return WLSettings(int(parts[2]), len(parts) == 3, algorithm=parts[0], graph=parts[1])


def fit_features(spec: str, domain: str, tasks_and_trajectories: TasksAndTrajectories) -> Encoder:
    """The feature family `spec` names, its vocabulary collected from the given states: goal paths
    (`paths:<length>`, `embedding/goal_paths.py`) or WL (`parse_features`; wlplan itself, not `wl_fast`,
    so that every family's time is that of one implementation)."""
    length = spec.removeprefix("paths:")
    if length != spec:
        if not length.isdigit():
            raise InputError("--features", f"'{spec}' is not paths:<length>")
        return GoalPathEncoder.fit(domain, tasks_and_trajectories, int(length))
    encoder = WLEncoder.fit(domain, tasks_and_trajectories, parse_features(spec))
    encoder.use_fast = False
    return encoder


def refuse_test_splits(flag: str, splits: Sequence[str]) -> None:
    """InputError for a test split: settings are selected on validation and our own problems only."""
    if set(splits) & set(TEST_SPLITS):
        raise InputError(flag, "settings are selected on validation and our own problems, never on tests")


def decode_split(
    run: LoadedModel,
    root: str,
    domain: str,
    split: str,
    settings: DecodeConfig,
    cost_to_go: CostToGo | None,
    stats: DecodeStats | None = None,
) -> tuple[list[DecodeResult], float]:
    """Every problem of `<root>/<domain>/<split>` decoded with the run's model (and `cost_to_go`), each
    plan replayed (`check_plan`); and the seconds decoding took (where they went: into `stats`)."""
    domain_file = layout.domain_file(root, domain)
    tasks = [load_task(domain_file, p) for p in layout.problem_files(root, domain, split)]
    start = time.perf_counter()
    results = decode(tasks, run.model, run.encoder, settings, stats=stats, cost_to_go=cost_to_go)
    seconds = time.perf_counter() - start
    return [check_plan(task, result, settings) for task, result in zip(tasks, results)], seconds


def define_best_first_flags(purpose: str) -> Callable[[LoadedModel], DecodeConfig]:
    """Define --budget, --value_weight and --path_weight (help prefixed with `purpose`); returns what
    makes a run's best-first decoding settings with them (the run's own where a flag is unset)."""
    budget = flags.DEFINE_integer("budget", 10_000, f"{purpose}: best-first node expansions per problem.")
    value_weight = flags.DEFINE_float("value_weight", None, f"{purpose}: decode.value_weight (default: the run's).")
    path_weight = flags.DEFINE_float("path_weight", None, f"{purpose}: decode.path_weight (default: the run's).")

    def settings(run: LoadedModel) -> DecodeConfig:
        return decode_config(
            run.config,
            strategy="best_first",
            budget=budget.value,
            value_weight=value_weight.value,
            path_weight=path_weight.value,
        )

    return settings
