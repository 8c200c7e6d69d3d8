"""The `decode` section of a run's config: how a trained model is decoded into plans. Its defaults are
`base.DecodeConfig`'s (the paper's beam search); see `statecentric_jax/sections.py`."""

from __future__ import annotations

import ml_collections

from statecentric_jax.search.base import DecodeConfig, decode_config

# the DecodeConfig fields a run's config sets (the metric follows the model's mode; max_in_flight bounds memory)
SETTINGS = (
    "beam_width",
    "horizon_base",
    "horizon_per_object",
    "strategy",
    "budget",
    "priority",
    "value_weight",
    "path_weight",
    "exploration",
    "clip_cost_to_go",
    "goal_agenda",
    "action_elimination",
    "prune_dead_ends",
    "estimate_helpful_only",
    "prune_symmetric",
    "preferred_boost",
)


def decode() -> ml_collections.ConfigDict:
    """The paper's decoder. strategy: see search/strategies.py; budget: node expansions per problem (all
    strategies but beam); priority, value_weight, path_weight, exploration, clip_cost_to_go: best-first's
    order; goal_agenda: decode in stages with this many more goals each (search/agenda.py), 0: off;
    action_elimination: drop the steps a plan does not need (planning/elimination.py); prune_dead_ends: best-first
    closes the nodes from which the goal is unreachable even with deletes ignored (planning/relaxed.py);
    estimate_helpful_only: best-first with the relaxed-plan queue estimates only the children of the expanded
    node's helpful actions; the others wait in that queue alone (search/open_lists.py); prune_symmetric: of the
    successors that differ only by interchangeable objects, one is kept (planning/symmetry.py); preferred_boost:
    best-first with the relaxed-plan queue also keeps the helpful actions' children in a queue of their own,
    which takes this many turns after each shorter relaxed plan, 0: no such queue (search/open_lists.py)."""
    defaults = DecodeConfig()
    section = ml_collections.ConfigDict()
    for name in SETTINGS:
        setattr(section, name, getattr(defaults, name))
    return section


def check(config: ml_collections.ConfigDict) -> None:
    """Refuse a decode setting the search does not know."""
    decode_config(config)
