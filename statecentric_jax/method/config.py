"""The `aggregation` section of a run's config: expert data aggregation (method/aggregation.py); see
`statecentric_jax/sections.py`."""

from __future__ import annotations

from typing import Literal, get_args

import ml_collections

from statecentric_jax.errors import InputError
from statecentric_jax.learning import config as learning_config
from statecentric_jax.sections import require_int, require_one_of

AggregationRetrain = Literal["all", "value"]
AGGREGATION_RETRAIN: tuple[str, ...] = get_args(AggregationRetrain)
AGGREGATION_SPLITS = ("train", "validation")  # the only problems expert data aggregation may plan for


def selection() -> ml_collections.ConfigDict:
    """Per-domain selection of the recommended configuration's settings (method/selection.py); only in
    `config.recommended()`: a config without this section trains as it is."""
    section = ml_collections.ConfigDict()
    section.steps = (  # in order
        "cost_to_go_features,goal_paths,aggregation,value_weight,path_weight,unclipped,relaxed_plan,dead_ends,"
        "eliminated,symmetry,boosted"
    )
    section.budget = 10_000  # expansions per selection problem
    section.passes = 2  # passes over the menu, at most; the next one only where a pass kept a step
    return section


def aggregation() -> ml_collections.ConfigDict:
    section = ml_collections.ConfigDict()
    section.rounds = 0  # 0: off, the paper's training
    section.max_planner_calls = 200  # Fast Downward (A*+LM-cut) calls per round, at most
    section.time_limit = 60.0  # seconds per planner call
    section.splits = "train,validation"  # whose problems are decoded; never a test split
    section.retrain = "all"  # each round refits "all" (transition model, cost-to-go) or the "value" only
    section.alternative_plans = 0  # round 0: up to this many other optimal plans per problem; 0: off
    section.random_walks = 0  # round 0: up to this many random-walk states per problem, labelled; 0: off
    section.walk_steps = 10  # a random walk's length: 1 to this many steps from a state of the expert plan
    section.budget = 0  # best-first expansions per problem in a round's decoding; 0: decode.budget
    return section


def aggregates(config: ml_collections.ConfigDict) -> bool:
    """Whether the run adds expert data after its first training: rounds of aggregation, or round 0's other
    optimal plans or labelled random-walk states."""
    section = config.aggregation
    return section.rounds > 0 or section.alternative_plans > 0 or section.random_walks > 0


def aggregation_splits(config: ml_collections.ConfigDict) -> list[str]:
    """The splits whose problems aggregation decodes (comma-separated in the config)."""
    return [s.strip() for s in str(config.aggregation.splits).split(",") if s.strip()]


def check(config: ml_collections.ConfigDict) -> None:
    """Refuse aggregation settings that cannot run, or that would plan for a test split."""
    section = config.aggregation
    for name, least in (
        ("rounds", 0),
        ("max_planner_calls", 1),
        ("alternative_plans", 0),
        ("random_walks", 0),
        ("walk_steps", 1),
        ("budget", 0),
    ):
        require_int(f"aggregation.{name}", section[name], least)
    if not isinstance(section.time_limit, (int, float)) or not section.time_limit > 0:
        raise InputError(None, f"config aggregation.time_limit={section.time_limit!r} must be > 0 seconds")
    require_one_of("aggregation.retrain", section.retrain, AGGREGATION_RETRAIN)
    if section.retrain == "value" and config.value.kind == "none" and aggregates(config):
        raise InputError(None, "config aggregation.retrain='value' refits the cost-to-go: set value.kind")
    splits = aggregation_splits(config)
    if not splits or not set(splits) <= set(AGGREGATION_SPLITS):
        raise InputError(
            None,
            f"config aggregation.splits={section.splits!r} must name some of"
            f" {', '.join(AGGREGATION_SPLITS)} (never a test split)",
        )
    if learning_config.ensemble_members(config) and aggregates(config):
        raise InputError(
            None,
            f"config ensemble.members={config.ensemble.members!r}: not combined with aggregation.rounds,"
            " alternative_plans or random_walks > 0 yet (the members would miss the aggregated data)",
        )
