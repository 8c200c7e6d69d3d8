"""Can a linear cost-to-go on a run's features order the run's own training plans? A bound for the ridge.

    python -m benchmarks.ranking_bound \
        --run=runs/generalization/logistics/model-state-alpha10-aggregation4-calls200-value

Greedy best-first search follows an expert plan without backtracking when h falls along it
(h(s_t+1) < h(s_t)) and the plan's next state comes before its siblings (the other successors of
s_t). The ridge is fitted to the steps left, not to that order. This refits a linear function of
the same features on the same data (the training and validation plans, plus the run's aggregation
rounds, `aggregation/round*/trajectories.jsonl`) with a squared hinge on those orderings added to
the ridge's loss, weighted by each --rank_weights (0: the ridge itself; margin 1 along the plan, 0
against siblings), and prints the share of orderings it gets right on the data it was fitted on.
What a function fitted to them still gets wrong bounds any linear cost-to-go on these features; a
sibling may be as good as the plan's next state (another optimal plan), so that share stays below 1.
The last line counts the orderings between states with equal features, which no function of them
can get right.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np
import scipy.optimize
from absl import flags

from benchmarks.common import cost_to_go_features, print_header
from statecentric_jax.cli import run_main
from statecentric_jax.embedding.datasets import trajectories_path
from statecentric_jax.embedding.encoders import Pair
from statecentric_jax.errors import InputError
from statecentric_jax.experiments.aggregation import AGGREGATION_DIR
from statecentric_jax.experiments.pipeline import cache_dirs
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.learning.train import LoadedModel
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import Task, load_task
from statecentric_jax.problems.plan_generation import read_trajectories

_RUN = flags.DEFINE_string("run", None, "A trained run with a cost-to-go (config value.kind).", required=True)
_RANK_WEIGHTS = flags.DEFINE_list("rank_weights", ["0", "1", "10", "100"], "Weights of the ordering loss.")

COLUMNS = ("rank weight", "mean squared error", "plan steps where h falls", "plan's next state before a sibling")


@dataclasses.dataclass
class Orderings:
    """Plan states with their steps left, siblings, and the pairs (better, worse) greedy search needs."""

    states: np.ndarray  # [N, F] features of the plans' states
    steps_left: np.ndarray  # [N]
    siblings: np.ndarray  # [M, F]
    along: np.ndarray  # [K, 2] (s_t+1, s_t) rows of `states`
    against: np.ndarray  # [L, 2] (s_t+1 row of `states`, sibling row of `siblings`)


def training_records(run: LoadedModel, workdir: str) -> list[dict]:
    """The expert plans the run's cost-to-go was fitted on: training, validation and aggregation rounds."""
    plans_dir = cache_dirs(run.config)[0]
    files = [trajectories_path(plans_dir, run.config.data.domain, split) for split in ("train", "validation")]
    files += sorted((pathlib.Path(workdir) / AGGREGATION_DIR).glob("round*/trajectories.jsonl"))
    return [record for path in files for record in read_trajectories(path)]


def orderings(run: LoadedModel, records: list[dict]) -> Orderings:
    """Every record's states and their siblings, embedded as decoding embeds them (with their parents)."""
    tasks: dict[str, tuple[Task, SuccessorGenerator]] = {}
    pairs: list[Pair] = []
    parents: list[frozenset[str] | None] = []
    sibling_pairs: list[Pair] = []
    sibling_parents: list[frozenset[str] | None] = []
    steps_left, along, against = [], [], []
    for record in records:
        source = record.get("source_file", record["problem_file"])  # aggregation: the problem it came from
        if source not in tasks:
            task = load_task(record["domain_file"], source)
            tasks[source] = task, SuccessorGenerator(task)
        task, generator = tasks[source]
        states = [frozenset(state) for state in record["states"]]
        first = len(pairs)
        for t, state in enumerate(states):
            pairs.append((task, state))
            parents.append(states[t - 1] if t else None)
            steps_left.append(len(states) - 1 - t)
        for t in range(len(states) - 1):
            along.append((first + t + 1, first + t))
            for _, successor in generator.successors(states[t]):
                if successor not in (states[t], states[t + 1]):
                    against.append((first + t + 1, len(sibling_pairs)))
                    sibling_pairs.append((task, successor))
                    sibling_parents.append(states[t])

    return Orderings(
        np.asarray(cost_to_go_features(run, pairs, parents), np.float64),
        np.asarray(steps_left, np.float64),
        np.asarray(cost_to_go_features(run, sibling_pairs, sibling_parents), np.float64),
        np.asarray(along, np.int64).reshape(-1, 2),
        np.asarray(against, np.int64).reshape(-1, 2),
    )


def fit(data: Orderings, alpha: float, rank_weight: float) -> tuple[np.ndarray, float]:
    """Weights and bias minimising (squared error + alpha |w|^2 + rank_weight * squared hinges) / N."""
    mean = data.states.mean(axis=0)
    states, siblings = data.states - mean, data.siblings - mean
    n = len(states)
    (better_along, worse_along), (better_against, worse_against) = data.along.T, data.against.T

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = params[:-1], params[-1]
        h, h_siblings = states @ w + b, siblings @ w + b
        hinge_along = np.maximum(h[better_along] - h[worse_along] + 1.0, 0.0)
        hinge_against = np.maximum(h[better_against] - h_siblings[worse_against], 0.0)
        error = h - data.steps_left
        hinges = hinge_along @ hinge_along + hinge_against @ hinge_against
        value = error @ error + alpha * w @ w + rank_weight * hinges
        grad_h = 2 * error
        grad_siblings = np.zeros(len(siblings))
        np.add.at(grad_h, better_along, 2 * rank_weight * hinge_along)
        np.add.at(grad_h, worse_along, -2 * rank_weight * hinge_along)
        np.add.at(grad_h, better_against, 2 * rank_weight * hinge_against)
        np.add.at(grad_siblings, worse_against, -2 * rank_weight * hinge_against)
        grad_w = states.T @ grad_h + siblings.T @ grad_siblings + 2 * alpha * w
        return value / n, np.append(grad_w, grad_h.sum() + grad_siblings.sum()) / n

    start = np.append(np.zeros(states.shape[1]), data.steps_left.mean())
    result = scipy.optimize.minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 5000})
    w = result.x[:-1]
    return w, float(result.x[-1] - mean @ w)


def main(argv):
    del argv
    run = load_run(_RUN.value)
    if run.cost_to_go is None:
        raise InputError(_RUN.value, "this run has no cost-to-go (config value.kind is none)")
    if run.config.value.features != "state":
        raise InputError(_RUN.value, "only a cost-to-go on φ(s) alone (config value.features=state) is refitted here")
    data = orderings(run, training_records(run, _RUN.value))
    print(f"{len(data.states)} plan states, {len(data.along)} plan steps, {len(data.against)} siblings")
    print_header(COLUMNS)
    for rank_weight in (float(w) for w in _RANK_WEIGHTS.value):
        w, b = fit(data, run.cost_to_go.alpha, rank_weight)
        h, h_siblings = data.states @ w + b, data.siblings @ w + b
        error = float(np.mean((h - data.steps_left) ** 2))
        falls = float(np.mean(h[data.along[:, 0]] < h[data.along[:, 1]]))
        first = float(np.mean(h[data.against[:, 0]] < h_siblings[data.against[:, 1]]))
        print(f"| {rank_weight:g} | {error:.2f} | {falls:.3f} | {first:.3f} |", flush=True)
    tied_along = np.all(data.states[data.along[:, 0]] == data.states[data.along[:, 1]], axis=1)
    tied_against = np.all(data.states[data.against[:, 0]] == data.siblings[data.against[:, 1]], axis=1)
    print(f"\nequal features: {tied_along.mean():.3f} of plan steps, {tied_against.mean():.3f} of siblings")


if __name__ == "__main__":
    run_main(main)
