"""The types every search module shares: decoding settings, outcomes, results, instances."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args

import numpy as np

from statecentric_jax.embedding.encoders import StateEncoder
from statecentric_jax.errors import InputError
from statecentric_jax.learning.transitions import TransitionModel
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import Task
from statecentric_jax.search import open_lists, scoring, strategies
from statecentric_jax.search.expander import Node, Problem
from statecentric_jax.search.outcome import Outcome

STRATEGIES: tuple[str, ...] = tuple(strategies.STRATEGIES)  # decode.strategy, for command-line enums
Priority = Literal["cumulative", "last"]
PRIORITIES: tuple[str, ...] = get_args(Priority)
EXPLORATIONS: tuple[str, ...] = tuple(open_lists.EXPLORATIONS)  # decode.exploration, for command-line enums


@dataclasses.dataclass(frozen=True)
class DecodeConfig:
    beam_width: int = 3
    metric: scoring.Metric = "cosine"  # cosine for state-mode models, euclidean for delta mode
    horizon_base: int = 100
    horizon_per_object: int = 10
    max_in_flight: int = 256  # instances decoded together (bounds memory)
    strategy: str = "beam"  # the paper's; a name of strategies.STRATEGIES
    budget: int = 10_000  # node expansions per instance (all strategies but the paper's beam)
    priority: Priority = "cumulative"  # best-first without a cost-to-go: sum of step distances, or the last one
    value_weight: float = 0.0  # best-first with a cost-to-go: value + weight * distance (0: distance breaks ties)
    path_weight: float = 0.0  # best-first with a cost-to-go: + weight * plan length so far (0: greedy)
    exploration: str = "none"  # best-first with a cost-to-go: a second queue (open_lists.EXPLORATIONS)
    clip_cost_to_go: bool = True  # best-first: a cost-to-go estimate below zero reads as zero (False: kept)
    goal_agenda: int = 0  # decode in stages, each with this many more goals (search/agenda.py); 0: the whole goal
    action_elimination: bool = False  # drop the steps a solved plan does not need (planning/elimination.py)
    prune_dead_ends: bool = False  # best-first: close a node the relaxed goal test rejects (planning/relaxed.py)
    estimate_helpful_only: bool = False  # best-first with relaxed_plan: only helpful actions' children are estimated
    prune_symmetric: bool = False  # one successor per orbit of interchangeable objects (planning/symmetry.py)
    preferred_boost: int = 0  # best-first with relaxed_plan: turns for helpful children per progress; 0: none
    time_limit: float = 0.0  # seconds per problem, checked between and within expansions (outcome "timeout"); 0: none
    memory_limit_mb: int = 0  # the process's resident memory (outcome "memory", search/limits.py); 0: none

    def __post_init__(self) -> None:
        scoring.check_metric(self.metric)
        minimum = {
            "beam_width": 1,
            "max_in_flight": 1,
            "budget": 1,
            "horizon_base": 1,
            "horizon_per_object": 0,
            "value_weight": 0,
            "path_weight": 0,
            "goal_agenda": 0,
            "preferred_boost": 0,
            "time_limit": 0,
            "memory_limit_mb": 0,
        }
        for name, least in minimum.items():
            if not getattr(self, name) >= least:
                raise InputError(None, f"decode.{name}={getattr(self, name)!r} must be at least {least}")
        if self.strategy not in STRATEGIES:
            raise InputError(None, f"unknown decoding strategy '{self.strategy}' (use one of {', '.join(STRATEGIES)})")
        if self.priority not in PRIORITIES:
            raise InputError(None, f"unknown best-first priority '{self.priority}' (use {' or '.join(PRIORITIES)})")
        if self.exploration not in EXPLORATIONS:
            raise InputError(
                None, f"unknown best-first exploration '{self.exploration}' (use {', '.join(EXPLORATIONS)})"
            )
        if self.exploration == "greedy" and self.path_weight == 0:
            raise InputError(None, "exploration 'greedy' drops the path term: it needs decode.path_weight > 0")
        if self.prune_dead_ends and not strategies.prunes_dead_ends(self.strategy):
            raise InputError(
                None,
                f"decode.prune_dead_ends closes nodes of best-first search, not of '{self.strategy}':"
                " use decode.strategy=best_first or lazy_best_first",
            )
        if self.estimate_helpful_only and (self.strategy != "best_first" or self.exploration != "relaxed_plan"):
            raise InputError(
                None,
                "decode.estimate_helpful_only leaves the other children to the relaxed-plan queue of best-first"
                " search: it needs decode.strategy=best_first and decode.exploration=relaxed_plan",
            )
        if self.preferred_boost and (self.strategy != "best_first" or self.exploration != "relaxed_plan"):
            raise InputError(
                None,
                "decode.preferred_boost keeps a queue of helpful actions' children beside the relaxed-plan queue of"
                " best-first search: it needs decode.strategy=best_first and decode.exploration=relaxed_plan",
            )

    def identity(self) -> dict[str, Any]:
        """The settings that decide a problem's result (for result caches): the resource limits only where
        set, so that results stored before they existed keep their key, and `max_in_flight` only with a
        time limit (problems decoded together share the clock; without a limit it changes no result)."""
        settings = dataclasses.asdict(self)
        for limit in ("time_limit", "memory_limit_mb"):
            if not settings[limit]:
                del settings[limit]
        if settings["clip_cost_to_go"]:  # as before the setting existed
            del settings["clip_cost_to_go"]
        for added in ("prune_dead_ends", "estimate_helpful_only", "prune_symmetric", "preferred_boost"):  # likewise
            if not settings[added]:
                del settings[added]
        if "time_limit" not in settings:
            del settings["max_in_flight"]
        return settings

    def horizon(self, task: Task) -> int:
        """T_max = max(100, 10·|O|) with the paper's constants."""
        return max(self.horizon_base, self.horizon_per_object * len(task.objects))


@dataclasses.dataclass
class DecodeResult:
    problem: str
    problem_file: str
    num_objects: int
    solved: bool
    plan: list[str]
    steps: int
    seconds: float
    outcome: str  # an Outcome value, or "cannot encode: <reason>"
    expanded: int = 0  # nodes expanded
    estimates_at_most_zero: int = 0  # cost-to-go estimates at or below zero its search read (`Instance`)


@dataclasses.dataclass(eq=False)
class Instance:
    """One problem being decoded."""

    index: int
    problem: Problem
    horizon: int
    started: float
    root: Node
    steps: int = 0  # rounds of expansion
    expanded: int = 0  # nodes expanded
    # cost-to-go estimates at or below zero that a search read (`strategies.BestFirst`): where there are none,
    # reading those below zero as zero (`clip_cost_to_go`) changed nothing in it
    estimates_at_most_zero: int = 0
    # (parent node, child state) pairs -> their model distances, where a strategy asks for them only when
    # they decide (`strategies.distances_only_break_ties`); None: every expansion comes with them
    tie_distances: Callable[[Sequence[tuple[Node, frozenset]]], np.ndarray] | None = None


def start(
    index: int, task: Task, model: TransitionModel, encoder: StateEncoder, config: DecodeConfig
) -> Instance | DecodeResult:
    """The instance ready to decode, or its result if it cannot even start."""
    started = time.perf_counter()
    try:
        goal = encoder.embed_goals([task])[0]
        initial = encoder.embed([(task, task.init)])[0]
    except InputError as e:
        return DecodeResult(
            task.name, task.problem_file, len(task.objects), False, [], 0, 0.0, f"cannot encode: {e.reason}"
        )
    root = Node(task.init, initial, None, 0, 0.0, model.init_carry(1))
    problem = Problem(task, SuccessorGenerator(task, config.prune_symmetric), goal)
    return Instance(index, problem, config.horizon(task), started, root)


def finish(inst: Instance, outcome: Outcome, node: Node | None) -> DecodeResult:
    task = inst.problem.task
    return DecodeResult(
        problem=task.name,
        problem_file=task.problem_file,
        num_objects=len(task.objects),
        solved=outcome is Outcome.GOAL,
        plan=node.actions() if node is not None else [],
        steps=inst.steps,
        seconds=time.perf_counter() - inst.started,
        outcome=outcome.value,
        expanded=inst.expanded,
        estimates_at_most_zero=inst.estimates_at_most_zero,
    )


def decode_config(config: Any, **overrides: Any) -> DecodeConfig:
    """Decoding settings of a run: cosine for state-mode models, Euclidean for delta mode; `overrides`
    (DecodeConfig fields) replace the run's where not None.

    Runs trained before a setting existed get its default (the paper's decoder)."""
    names = [field.name for field in dataclasses.fields(DecodeConfig)]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise InputError(None, f"unknown decoding setting(s) {', '.join(unknown)} (use {', '.join(names)})")
    settings = {name: config.decode.get(name) for name in names}
    settings["metric"] = "cosine" if config.model.mode == "state" else "euclidean"
    settings.update({k: v for k, v in overrides.items() if v is not None})
    return DecodeConfig(**{k: v for k, v in settings.items() if v is not None})
