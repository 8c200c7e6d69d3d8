"""Transition-model kinds on one domain's training problems: fit time, validation error, and per node
the prediction time against embedding that node's successors, and how often the expert's next state is
the successor nearest the prediction.

    python -m benchmarks.transition_models --pddl_root=<IPC-layout folder> \
        --domain=miconic --train=1-86/5 --validation=4-89/10 --models=ridge,xgb:one_output_per_tree:1,lstm:5

`--train` / `--validation` pick IPC training problems (problems/layout.py); plans and embeddings come
from the data cache like training's. A model is `ridge[:<rank>]`, `xgb:<multi_strategy>:<rounds>` (no early
stopping: the time per round is what is measured) or `lstm:<epochs>`. "nearest" counts, over the
validation split's transitions, the share where the expert's next state is the successor nearest the
prediction (ties shared); `zero` predicts no change.
"""

import itertools
import time
from typing import Any

import numpy as np
from absl import flags

from benchmarks.common import print_header
from statecentric_jax import config as config_lib
from statecentric_jax.cli import run_main
from statecentric_jax.embedding import datasets
from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning import lstm, ridge, xgb
from statecentric_jax.method import pipeline
from statecentric_jax.planning.successors import SuccessorGenerator

_PDDL_ROOT = flags.DEFINE_string("pddl_root", None, "A PDDL root in the IPC layout.")
_DOMAIN = flags.DEFINE_string("domain", None, "The domain.")
_TRAIN = flags.DEFINE_string("train", "1-86/5", "Training problems fitted on (positions, layout.parse_picks).")
_VALIDATION = flags.DEFINE_string("validation", "4-89/10", "Training problems validated on.")
_MODELS = flags.DEFINE_list("models", ["ridge"], "ridge[:<rank>], xgb:<multi_strategy>:<rounds>, lstm:<epochs>.")
_CACHE = flags.DEFINE_string("cache_dir", "runs/cache", "The data cache.")
flags.mark_flags_as_required(["pddl_root", "domain"])


class _NoChange:
    def init_carry(self, batch_size: int) -> None:
        return None

    def predict_next(self, states, goals, carry):
        return states, None


def _fit(spec: str, train, validation) -> tuple[Any, str, list[dict]]:
    kind, *args = spec.split(":")
    if kind == "ridge":
        settings = learning_config.ridge()
        settings.rank = int(args[0]) if args else settings.rank
        fitted, history = ridge.fit(train, validation, "delta", settings, 0)
        return fitted, f"alpha {fitted.alpha:g}, size {fitted.size()}", history
    if kind == "xgb":
        settings = learning_config.xgb()
        settings.multi_strategy, settings.rounds, settings.n_jobs, settings.early_stopping = (
            args[0],
            int(args[1]),
            1,
            10**6,
        )
        trees, history = xgb.fit(train, validation, "delta", settings, 0)
        return trees, f"{len(history)} rounds", history
    settings = learning_config.lstm()
    settings.epochs = int(args[0])
    ((model, history),) = lstm.fit_seeds(train, validation, "delta", settings, [13])
    return model, f"{len(history)} epochs", history


def main(argv):
    del argv
    print_header()
    config = config_lib.recommended()
    config.data.domain, config.data.pddl_root, config.data.cache_dir = _DOMAIN.value, _PDDL_ROOT.value, _CACHE.value
    config.data.ipc_train, config.data.ipc_validation = _TRAIN.value, _VALIDATION.value
    splits, encoder = pipeline.prepare_data(config)
    resolved = pipeline.resolved(config)
    plans_dir = pipeline.cache_dirs(resolved)[0]
    loaded = datasets.load_split_tasks(resolved.data.pddl_root, plans_dir, config.data.domain, "validation")
    nodes, embed_seconds = [], 0.0
    for task, states in loaded:
        generator, goal = SuccessorGenerator(task), encoder.embed_goals([task])[0]
        for state, following in itertools.pairwise(states):
            children = [child for _, child in generator.successors(state)]
            start = time.perf_counter()
            embedded = encoder.embed([(task, child) for child in children], [state] * len(children))
            embed_seconds += time.perf_counter() - start
            nodes.append((encoder.embed([(task, state)])[0], goal, embedded, [c == following for c in children]))
    print(f"{config.data.domain}: D={encoder.dim}, {len(nodes)} validation nodes")
    print(f"embedding a node's successors: {1e3 * embed_seconds / len(nodes):.2f} ms per node")

    def nearest(model) -> float:
        hits = 0.0
        for state, goal, children, is_next in nodes:
            predicted, _ = model.predict_next(state[None], goal[None], model.init_carry(1))
            distances = ((children - predicted) ** 2).sum(axis=1)
            ties = np.flatnonzero(distances <= distances.min() + 1e-9)
            hits += sum(is_next[i] for i in ties) / len(ties)
        return hits / len(nodes)

    print("| model | fit s | validation MSE | predict ms/node | nearest | notes |\n|---|---|---|---|---|---|")
    zero_mse = float(np.mean(xgb.rows(splits["validation"], "delta")[1] ** 2))
    print(f"| zero | 0 | {zero_mse:.5f} | 0 | {nearest(_NoChange()):.3f} | |")
    state, goal = nodes[0][0][None], nodes[0][1][None]
    for spec in _MODELS.value:
        start = time.perf_counter()
        model, notes, history = _fit(spec, splits["train"], splits["validation"])
        seconds = time.perf_counter() - start
        model.predict_next(state, goal, model.init_carry(1))
        start = time.perf_counter()
        for _ in range(20):
            model.predict_next(state, goal, model.init_carry(1))
        predict_ms = 1e3 * (time.perf_counter() - start) / 20
        loss = min(row["validation_loss"] for row in history)
        print(
            f"| {spec} | {seconds:.1f} | {loss:.5f} | {predict_ms:.2f} | {nearest(model):.3f} | {notes} |", flush=True
        )


if __name__ == "__main__":
    run_main(main)
