"""The sections of a run's config that training reads: `model` (which transition model), `lstm` and `xgb`
(the paper's hyperparameters, Table 7), `value` (a learned cost-to-go, learning/value.py) and `ensemble`
(more models averaged with this one, learning/ensemble.py). See `statecentric_jax/sections.py`."""

from __future__ import annotations

import json
from typing import Literal, get_args

import ml_collections

from statecentric_jax.embedding import config as embedding_config
from statecentric_jax.errors import InputError
from statecentric_jax.learning.transitions import MODES
from statecentric_jax.sections import require_int, require_one_of

ModelKind = Literal["lstm", "xgb"]
MODEL_KINDS: tuple[str, ...] = get_args(ModelKind)  # the paper's (Table 1)
TRANSITION_KINDS = (*MODEL_KINDS, "ridge")  # and beyond it: a linear model whose cost does not grow with D
MultiStrategy = Literal["one_output_per_tree", "multi_output_tree"]
MULTI_STRATEGIES: tuple[str, ...] = get_args(MultiStrategy)
ValueKind = Literal["none", "ridge"]
VALUE_KINDS: tuple[str, ...] = get_args(ValueKind)
ValueEmbedding = Literal["model", "own"]
VALUE_EMBEDDINGS: tuple[str, ...] = get_args(ValueEmbedding)
WL_VOCABULARIES = ("plans", "fitted")  # value.wl_vocabulary


def model() -> ml_collections.ConfigDict:
    section = ml_collections.ConfigDict()
    section.kind = "lstm"
    section.mode = "state"
    return section


def lstm() -> ml_collections.ConfigDict:
    section = ml_collections.ConfigDict()
    section.hidden = 256
    section.layers = 2
    section.learning_rate = 1e-2
    section.batch_size = 32
    section.epochs = 250
    return section


def xgb() -> ml_collections.ConfigDict:
    section = ml_collections.ConfigDict()
    section.max_depth = 8
    section.learning_rate = 0.1
    section.rounds = 1000
    section.early_stopping = 10
    section.multi_strategy = "one_output_per_tree"  # the paper's; or "multi_output_tree"
    section.n_jobs = 0  # CPU threads; 0 = all cores
    return section


def ridge() -> ml_collections.ConfigDict:
    """model.kind="ridge" (learning/ridge.py); absent from the paper's configs (`model_settings`)."""
    section = ml_collections.ConfigDict()
    section.alphas = [1.0, 10.0, 100.0, 1000.0, 10000.0]  # strengths tried; the best on validation is kept
    section.rank = 64  # the dual coefficients' rank kept (truncated SVD): the prediction's cost; 0: exact
    return section


def model_settings(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """The section of the configured transition model (`lstm`, `xgb` or `ridge`; ridge's at its defaults
    where the config has none)."""
    kind = config.model.kind
    return config[kind] if kind in config else ridge()


def value() -> ml_collections.ConfigDict:
    """A learned cost-to-go (learning/value.py), used by best-first decoding."""
    section = ml_collections.ConfigDict()
    section.kind = "none"  # or "ridge"
    section.features = "state"  # φ(s) alone, or "state_goal": [φ(s), φ(g)]
    section.alpha = 10.0  # ridge strength (selected by search success: benchmarks/generalization.py)
    section.embedding = "model"  # φ: the transition model's, or "own": a WL embedding of its own (below)
    section.wl_iterations = 4  # the own embedding's WL iterations
    section.wl_multiset_hash = False  # the own embedding's hash: multiset (the paper's φ), or set
    section.wl_algorithm = "wl"  # the own embedding's wlplan algorithm, e.g. "lwl2" (pairs of nodes)
    section.wl_graph = "ilg"  # the own embedding's wlplan graph, or "ploig" (objects joined by atoms)
    # the own embedding's colours: from the train split's "plans", or from every state it is "fitted" on
    # (train and validation plans, and aggregated trajectories: learning/value.py)
    section.wl_vocabulary = "plans"
    # goal paths of at most this many edges beside φ (embedding/goal_paths.py: how each unreached goal's
    # objects are joined, which WL colours cannot see); 0: off
    section.goal_paths = 0
    return section


def ensemble() -> ml_collections.ConfigDict:
    """More models averaged with this one (learning/ensemble.py)."""
    section = ml_collections.ConfigDict()
    section.members = ""  # comma-separated kind:mode, e.g. "lstm:state"; "": off, the paper's one model
    return section


def defaults() -> dict:
    """The sections training and loading a trained run read, at their defaults, as JSON."""
    config = ml_collections.ConfigDict()
    config.data = embedding_config.data()
    config.model, config.lstm, config.xgb = model(), lstm(), xgb()
    config.value, config.ensemble = value(), ensemble()
    return json.loads(config.to_json())


def own_value_embedding(config: ml_collections.ConfigDict) -> bool:
    """Whether the run has a cost-to-go that reads a WL embedding of its own, not the transition model's."""
    return config.value.kind != "none" and config.value.embedding == "own"


def value_goal_paths(config: ml_collections.ConfigDict) -> int:
    """The length of the goal paths beside the cost-to-go's φ; 0 (none) without a cost-to-go."""
    return config.value.goal_paths if config.value.kind != "none" else 0


def ensemble_members(config: ml_collections.ConfigDict) -> list[tuple[str, str]]:
    """(kind, mode) of each model trained beside the configured one and averaged with it when decoding;
    [] when off. Raises on a bad member."""
    text = str(config.ensemble.members)
    members: list[tuple[str, str]] = []
    for spec in (s.strip() for s in text.split(",") if s.strip()):
        kind, _, mode = spec.partition(":")
        if kind not in TRANSITION_KINDS or mode not in MODES:
            kinds, modes = ", ".join(TRANSITION_KINDS), ", ".join(MODES)
            reason = f"'{spec}' is not kind:mode (kind one of {kinds}; mode one of {modes})"
        elif (kind, mode) in members or (kind, mode) == (config.model.kind, config.model.mode):
            reason = (
                f"'{spec}' is already in the ensemble (the configured model is {config.model.kind}:{config.model.mode})"
            )
        else:
            members.append((kind, mode))
            continue
        raise InputError(None, f"config ensemble.members={text!r}: {reason}")
    return members


def ensemble_member(config: ml_collections.ConfigDict, kind: str, mode: str) -> ml_collections.ConfigDict:
    """The config of one ensemble member: the run's own, with another model and no ensemble of its own."""
    member = config.copy_and_resolve_references()
    member.model.kind, member.model.mode = kind, mode
    member.ensemble.members = ""
    return member


def check(config: ml_collections.ConfigDict) -> None:
    """Refuse settings no model understands, before any work is done."""
    require_one_of("model.kind", config.model.kind, TRANSITION_KINDS)
    require_one_of("model.mode", config.model.mode, MODES)
    require_one_of("xgb.multi_strategy", config.xgb.multi_strategy, MULTI_STRATEGIES)
    require_one_of("value.kind", config.value.kind, VALUE_KINDS)
    for name, least in (("hidden", 1), ("layers", 1), ("batch_size", 1), ("epochs", 1)):
        require_int(f"lstm.{name}", config.lstm[name], least)
    for name, least in (("max_depth", 1), ("rounds", 1), ("early_stopping", 1), ("n_jobs", 0)):
        require_int(f"xgb.{name}", config.xgb[name], least)
    _check_value(config)
    ensemble_members(config)


def _check_value(config: ml_collections.ConfigDict) -> None:
    if config.value.kind == "none":
        return
    require_one_of("value.embedding", config.value.embedding, VALUE_EMBEDDINGS)
    require_int("value.goal_paths", config.value.goal_paths, 0)
    if config.value.goal_paths and config.value.features != "state":  # no φ(g): every goal atom holds there
        raise InputError(None, "config value.goal_paths reads φ(s) alone: set value.features='state'")
    if config.value.embedding != "own":
        return
    value_section = config.value
    embedding_config.check_wl("value", value_section.wl_iterations, value_section.wl_algorithm, value_section.wl_graph)
    require_one_of("value.wl_vocabulary", value_section.wl_vocabulary, WL_VOCABULARIES)
    if config.value.features != "state":  # its own φ(g) is never computed: its WL graph marks the goal atoms
        raise InputError(None, "config value.embedding='own' reads φ(s) alone: set value.features='state'")
