"""Train one configuration into a workdir, and load it back for decoding.

A workdir holds:

  checkpoint/       the model: an orbax checkpoint (LSTM), checkpoint/model.ubj (XGBoost) or checkpoint/ridge.npz
  encoder.json      the state encoder the data was embedded with
  value.npz         the cost-to-go, if the config has one (learning/value.py; value_encoder.json: its own φ;
                    value_goal_paths.json: goal paths beside φ)
  metrics.jsonl     one line per epoch (LSTM) or boosting round (XGBoost): train and validation loss
  model_size.json   LSTM parameter count, or XGBoost tree nodes / trees / rounds
  training.json     trained_together_seeds (LSTM, one vmapped program) or trained_once_for_seeds (XGBoost)
  config.json       the resolved config, written last: a workdir with it is complete
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import time
from collections.abc import Mapping, Sequence

import ml_collections
from absl import logging

from statecentric_jax import sections
from statecentric_jax.atomic import write_text
from statecentric_jax.embedding import config as embedding_config
from statecentric_jax.embedding.datasets import EmbeddedSplit
from statecentric_jax.embedding.encoders import Encoder, load_encoder
from statecentric_jax.errors import InputError
from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning import lstm, ridge, value, xgb
from statecentric_jax.learning.transitions import TransitionModel

CONFIG_FILE = "config.json"
CHECKPOINT_DIR = "checkpoint"
ENCODER_FILE = "encoder.json"
METRICS_FILE = "metrics.jsonl"
SIZE_FILE = "model_size.json"
TRAINING_FILE = "training.json"  # how the seeds were trained (together, or once for all)

_KINDS = {
    "lstm": lstm,
    "xgb": xgb,
    "ridge": ridge,
}  # each: fit(train, validation, mode, settings, seed), load(dir, dim, mode, settings)


@dataclasses.dataclass
class TrainResult:
    workdir: str
    kind: str
    mode: str
    steps: int  # epochs (LSTM) or boosting rounds (XGBoost) run
    best_step: int  # the epoch / round whose model was kept
    best_validation_loss: float
    model_size: dict[str, int]
    seconds: float


@dataclasses.dataclass
class LoadedModel:
    model: TransitionModel
    encoder: Encoder
    config: ml_collections.ConfigDict
    cost_to_go: value.RidgeCostToGo | None = None  # a learned remaining-steps estimate, if the config has one
    member_dirs: tuple[str, ...] = ()  # an ensemble's member runs (ensemble.load_run): their files decide too


def _check_data(
    config: ml_collections.ConfigDict, train: EmbeddedSplit, validation: EmbeddedSplit, encoder: Encoder
) -> None:
    for split in (train, validation):
        if split.domain != config.data.domain or split.encoding != config.data.encoding:
            raise InputError(
                None,
                f"{split.split} data is {split.domain}/{split.encoding},"
                f" config wants {config.data.domain}/{config.data.encoding}",
            )
        if not any(len(t) > 1 for t in split.trajectories):
            raise InputError(None, f"{split.split} split of {split.domain} has no transition to learn from")
        if split.goals.shape[1] != encoder.dim:
            raise InputError(
                None, f"{split.split} embeddings have dimension {split.goals.shape[1]}, the encoder {encoder.dim}"
            )
    if encoder.domain != config.data.domain or encoder.kind != config.data.encoding:
        raise InputError(
            None,
            f"encoder is {encoder.domain}/{encoder.kind}, config wants {config.data.domain}/{config.data.encoding}",
        )


def train_model(
    config: ml_collections.ConfigDict,
    train: EmbeddedSplit,
    validation: EmbeddedSplit,
    encoder: Encoder,
    workdir: str | os.PathLike,
    value_data: value.ValueData | None = None,
) -> TrainResult:
    """Fit the configured model on `train`, select it on `validation`, and write the workdir."""
    (result,) = train_models(config, train, validation, encoder, {config.seed: workdir}, value_data)
    return result


def train_models(
    config: ml_collections.ConfigDict,
    train: EmbeddedSplit,
    validation: EmbeddedSplit,
    encoder: Encoder,
    workdirs: Mapping[int, str | os.PathLike],
    value_data: value.ValueData | None = None,
) -> list[TrainResult]:
    """One model per seed into its workdir, trained in one go: the LSTM's seeds together (`lstm.fit_seeds`);
    XGBoost, which ignores the seed, once, saved into every seed's workdir. `TRAINING_FILE` says which.
    The cost-to-go is fitted on `value_data` when it has an embedding of its own (`value.embedding=own`)."""
    check(config)
    _check_data(config, train, validation, encoder)
    kind, mode, seeds = config.model.kind, config.model.mode, list(workdirs)
    start = time.perf_counter()
    fitted: Sequence[tuple[lstm.LSTMModel | xgb.XGBModel | ridge.RidgeModel, list[dict]]]
    if kind == "lstm":
        fitted = lstm.fit_seeds(train, validation, mode, config[kind], seeds)
        how = {"trained_together_seeds": seeds}
    else:  # without subsampling the booster does not use its seed; ridge is exact
        settings = learning_config.model_settings(config)
        fitted = [_KINDS[kind].fit(train, validation, mode, settings, seeds[0])] * len(seeds)
        how = {"trained_once_for_seeds": seeds}
    cost_to_go = None  # does not depend on the seed: fitted once
    if config.value.kind == "ridge":
        cost_to_go, value_fit = fit_cost_to_go(config, train, validation, value_data)
        logging.info("cost-to-go: %s", value_fit)
    seconds = time.perf_counter() - start
    results = []
    for seed, (model, history) in zip(seeds, fitted):
        seeded = config.copy_and_resolve_references()
        seeded.seed = seed
        workdir = pathlib.Path(workdirs[seed])
        results.append(_write(seeded, model, history, encoder, cost_to_go, workdir, seconds, how))
    return results


def fit_cost_to_go(
    config: ml_collections.ConfigDict,
    train: EmbeddedSplit,
    validation: EmbeddedSplit,
    value_data: value.ValueData | None,
) -> tuple[value.RidgeCostToGo, dict]:
    """The configured cost-to-go, on the transition model's embedded splits or on its own (`value_data`: its
    own φ, or goal paths beside φ)."""
    if not learning_config.own_value_embedding(config) and not learning_config.value_goal_paths(config):
        return value.fit(train, validation, config.value.alpha, config.value.features)
    if value_data is None:
        raise InputError(None, "config value.embedding='own' or value.goal_paths needs its data: prepare_value_data")
    own = value_data.phi if value_data.own else None
    alpha, features = config.value.alpha, config.value.features
    return value.fit(value_data.train, value_data.validation, alpha, features, own, value_data.goal_paths)


def _write(
    config, model, history, encoder: Encoder, cost_to_go, workdir: pathlib.Path, seconds: float, how: dict
) -> TrainResult:
    kind, mode = config.model.kind, config.model.mode
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / CONFIG_FILE).unlink(missing_ok=True)  # the workdir is incomplete until it is rewritten
    model.save(workdir / CHECKPOINT_DIR)
    encoder.save(workdir / ENCODER_FILE)
    if cost_to_go is not None:
        cost_to_go.save(workdir)
    write_text(workdir / METRICS_FILE, "".join(json.dumps(row) + "\n" for row in history))
    size = model.size()
    write_text(workdir / SIZE_FILE, json.dumps({"kind": kind, "dim": model.dim, **size}, indent=1) + "\n")
    write_text(workdir / TRAINING_FILE, json.dumps({**how, "seconds": seconds}, indent=1) + "\n")
    write_text(workdir / CONFIG_FILE, config.to_json(indent=1) + "\n")

    best = min(history, key=lambda row: row["validation_loss"])
    result = TrainResult(str(workdir), kind, mode, len(history), best["step"], best["validation_loss"], size, seconds)
    logging.info(
        "trained %s %s in %.1f s: best validation loss %.5g at step %d of %d, size %s",
        kind,
        mode,
        seconds,
        result.best_validation_loss,
        result.best_step,
        result.steps,
        size,
    )
    return result


def check(config: ml_collections.ConfigDict) -> None:
    """Refuse data or model settings training does not understand."""
    embedding_config.check(config)
    learning_config.check(config)


def read_config(workdir: str | os.PathLike) -> ml_collections.ConfigDict:
    """The resolved config of a finished training run, with the settings of the sections training reads that
    were added since it was written at their defaults (`statecentric_jax.config.read` completes the rest)."""
    path = pathlib.Path(workdir) / CONFIG_FILE
    if not path.is_file():
        raise InputError(
            workdir, f"not a trained model: no {CONFIG_FILE} (wrong directory, or training did not finish)"
        )
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        missing = [name for name in sections.ALWAYS_STORED if name not in stored]
        if missing:
            raise InputError(path, f"corrupt config: no {', '.join(missing)}")
        config = ml_collections.ConfigDict(sections.with_defaults(stored, learning_config.defaults()))
        check(config)
    except InputError as e:
        raise InputError(path, e.reason) from None
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, KeyError, TypeError) as e:
        raise InputError(path, f"corrupt config ({type(e).__name__}: {e})") from None
    return config


def load_model(workdir: str | os.PathLike, domain: str | None = None, encoding: str | None = None) -> LoadedModel:
    """Model, encoder and config of a workdir, on this machine's device; refuses another domain or encoding."""
    workdir = pathlib.Path(workdir)
    config = read_config(workdir)
    for name, want, have in (("domain", domain, config.data.domain), ("encoding", encoding, config.data.encoding)):
        if want is not None and want != have:
            raise InputError(workdir, f"model was trained for {name} '{have}', not '{want}'")
    encoder = load_encoder(workdir / ENCODER_FILE, domain=config.data.domain, kind=config.data.encoding)
    kind = config.model.kind
    settings = learning_config.model_settings(config)
    model = _KINDS[kind].load(workdir / CHECKPOINT_DIR, encoder.dim, config.model.mode, settings)
    own, goal_paths = learning_config.own_value_embedding(config), learning_config.value_goal_paths(config) > 0
    cost_to_go = value.load(workdir, encoder.dim, own, goal_paths) if config.value.kind != "none" else None
    return LoadedModel(model, encoder, config, cost_to_go)
