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

Two questions more, for choosing features:

* `--held_out=<trajectories.jsonl>,...` (plans of larger problems, e.g. Fast Downward's from
  `launch/generate_plans.py`): the error and the same two shares on those plans, for each fitted
  function read as decoding reads it (never below zero), and the share of their states where it
  is negative. What carries over to larger problems is what search needs, not the fit on the
  training plans.
* `--features=<algorithm>:<graph>:<iterations>[:set],...` refits on other WL features (wlplan's
  algorithms, e.g. `lwl2`, which colours pairs of nodes, and graphs, e.g. `ploig`; multiset hash
  unless `:set`), their vocabulary collected from the same training states; `run` (the default)
  is the run's own cost-to-go features. It prints each one's dimension, the share of held-out
  colour occurrences outside its vocabulary, and wlplan's time per held-out state (decoding's
  `wl_fast` is faster, for the run's WL features only). `paths:<length>` is goal paths
  (`embedding/goal_paths.py`: how each unreached goal's objects are joined, which WL colours cannot
  see), and `run+paths:4` puts two families side by side: does the second add what the first misses?
* `--search_splits=large,large-more` (of `--search_root`, our own problems; never a test split):
  each fitted function, as the run's cost-to-go with its features, guides the run's best-first
  search on those problems (`--budget`, `--value_weight`, `--path_weight`; default: the run's
  decoding settings), with solved problems and mean plan length per split. Ordering the training
  plans better need not mean solving more: this measures whether the ordering loss carries over.
"""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import time
from collections.abc import Callable, Sequence

import numpy as np
import scipy.optimize
from absl import flags

from benchmarks.common import decode_split, define_best_first_flags, fit_features, print_header, refuse_test_splits
from statecentric_jax.cli import run_main
from statecentric_jax.embedding.datasets import trajectories_path
from statecentric_jax.embedding.encoders import Encoder, Pair, WLEncoder
from statecentric_jax.embedding.side_by_side import SideBySide
from statecentric_jax.errors import InputError
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.learning.train import LoadedModel
from statecentric_jax.learning.value import RidgeCostToGo, features_encoder
from statecentric_jax.method.aggregation import AGGREGATION_DIR
from statecentric_jax.method.pipeline import cache_dirs
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import Task, load_task
from statecentric_jax.problems.plan_generation import read_trajectories

_RUN = flags.DEFINE_string("run", None, "A trained run with a cost-to-go (config value.kind).", required=True)
_RANK_WEIGHTS = flags.DEFINE_list("rank_weights", ["0", "1", "10", "100"], "Weights of the ordering loss.")
_FEATURES = flags.DEFINE_list(
    "features",
    ["run"],
    "run (the run's cost-to-go features), <algorithm>:<graph>:<iterations>[:set] (wlplan), paths:<length>; '+' joins.",
)
_HELD_OUT = flags.DEFINE_list("held_out", [], "trajectories.jsonl files of plans to order, not fitted on.")
_SEARCH_ROOT = flags.DEFINE_string(
    "search_root", "runs/generalization/large-problems", "PDDL root of --search_splits (benchmarks.generalization's)."
)
_SEARCH_SPLITS = flags.DEFINE_list("search_splits", [], "Splits to search with each fitted cost-to-go.")
_SETTINGS = define_best_first_flags("--search_splits")

COLUMNS = (
    "features",
    "D",
    "rank weight",
    "mean squared error",
    "plan steps where h falls",
    "plan's next state before a sibling",
    "held out: mean squared error",
    "held out: h falls",
    "held out: next state first",
    "held out: plan states with h < 0",
    "held out: unseen colours",
    "held out: ms per state",
)
Embed = Callable[[Sequence[Pair], Sequence["frozenset[str] | None"]], tuple[np.ndarray, float]]
Plan = tuple[Task, SuccessorGenerator, list[frozenset[str]]]


@dataclasses.dataclass
class Orderings:
    """Plan states with their steps left, siblings, and the pairs (better, worse) greedy search needs."""

    states: np.ndarray  # [N, F] features of the plans' states
    steps_left: np.ndarray  # [N]
    siblings: np.ndarray  # [M, F]
    along: np.ndarray  # [K, 2] (s_t+1, s_t) rows of `states`
    against: np.ndarray  # [L, 2] (s_t+1 row of `states`, sibling row of `siblings`)
    unseen: float  # share of WL colour occurrences outside the vocabulary
    seconds_per_state: float  # embedding time

    def shares(self, w: np.ndarray, b: float, clamped: bool = False) -> tuple[float, float, float]:
        """Mean squared error of h = features @ w + b, share of steps where h falls, of siblings after.
        `clamped`: of h as decoding reads it, never below zero (learning/value.py), so a function that
        goes negative on larger problems is as flat there as search finds it."""
        h, h_siblings = self.states @ w + b, self.siblings @ w + b
        if clamped:
            h, h_siblings = np.maximum(h, 0.0), np.maximum(h_siblings, 0.0)
        error = float(np.mean((h - self.steps_left) ** 2))
        falls = float(np.mean(h[self.along[:, 0]] < h[self.along[:, 1]]))
        first = float(np.mean(h[self.against[:, 0]] < h_siblings[self.against[:, 1]]))
        return error, falls, first


def training_records(run: LoadedModel, workdir: str) -> list[dict]:
    """The expert plans the run's cost-to-go was fitted on: training, validation and aggregation rounds."""
    plans_dir = cache_dirs(run.config)[0]
    files = [trajectories_path(plans_dir, run.config.data.domain, split) for split in ("train", "validation")]
    files += sorted((pathlib.Path(workdir) / AGGREGATION_DIR).glob("round*/trajectories.jsonl"))
    return [record for path in files for record in read_trajectories(path)]


def load_plans(records: list[dict]) -> list[Plan]:
    """Each record's task (loaded once per problem file), successor generator and states."""
    tasks: dict[str, tuple[Task, SuccessorGenerator]] = {}
    plans = []
    for record in records:
        source = record.get("source_file", record["problem_file"])  # aggregation: the problem it came from
        if source not in tasks:
            task = load_task(record["domain_file"], source)
            tasks[source] = task, SuccessorGenerator(task)
        plans.append((*tasks[source], [frozenset(state) for state in record["states"]]))
    return plans


@dataclasses.dataclass
class PlanPairs:
    """Every plan's states and their siblings as (task, state) pairs with their parents, before embedding."""

    pairs: list[Pair]
    parents: list[frozenset[str] | None]
    sibling_pairs: list[Pair]
    sibling_parents: list[frozenset[str] | None]
    steps_left: list[int]
    along: list[tuple[int, int]]
    against: list[tuple[int, int]]

    def __len__(self) -> int:
        return len(self.pairs) + len(self.sibling_pairs)


def plan_pairs(plans: list[Plan]) -> PlanPairs:
    """The pairs `orderings` embeds, built once for every feature family."""
    out = PlanPairs([], [], [], [], [], [], [])
    for task, generator, states in plans:
        first = len(out.pairs)
        for t, state in enumerate(states):
            out.pairs.append((task, state))
            out.parents.append(states[t - 1] if t else None)
            out.steps_left.append(len(states) - 1 - t)
        for t in range(len(states) - 1):
            out.along.append((first + t + 1, first + t))
            for _, successor in generator.successors(states[t]):
                if successor not in (states[t], states[t + 1]):
                    out.against.append((first + t + 1, len(out.sibling_pairs)))
                    out.sibling_pairs.append((task, successor))
                    out.sibling_parents.append(states[t])
    return out


def orderings(plans: PlanPairs, embed: Embed) -> Orderings:
    """The plans' states and siblings, embedded as decoding embeds them (with their parents)."""
    start = time.perf_counter()
    features, unseen = embed(plans.pairs, plans.parents)
    sibling_features, sibling_unseen = embed(plans.sibling_pairs, plans.sibling_parents)
    seconds = time.perf_counter() - start
    return Orderings(
        np.asarray(features, np.float64),
        np.asarray(plans.steps_left, np.float64),
        np.asarray(sibling_features, np.float64),
        np.asarray(plans.along, np.int64).reshape(-1, 2),
        np.asarray(plans.against, np.int64).reshape(-1, 2),
        (unseen * len(plans.pairs) + sibling_unseen * len(plans.sibling_pairs)) / max(len(plans), 1),
        seconds / max(len(plans), 1),
    )


def refuse_what_would_not_fit(spec: str, states: int, dim: int) -> None:
    """A one-line error before the work, where the features (float64, held about three times over while
    fitting) would outgrow the memory free now; otherwise the kernel ends the benchmark without a word."""
    needed = 3 * 8 * states * dim
    free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if needed > free:
        raise InputError(
            "--features",
            f"'{spec}': {states:,} states x {dim:,} features need about {needed / 2**30:.1f} GiB,"
            f" {free / 2**30:.1f} GiB free (fewer iterations or --held_out plans)",
        )


def feature_embedding(run: LoadedModel, spec: str, training: list[Plan]) -> tuple[Encoder, Encoder | None]:
    """The encoder `spec` names, and the one a cost-to-go on it embeds with in search (None: the transition
    model's, as the run's cost-to-go may): the run's own, goal paths (`paths:<length>`,
    `embedding/goal_paths.py`) or WL fitted on the training plans; `a+b` side by side."""
    if "+" in spec:
        joined = SideBySide([feature_embedding(run, part, training)[0] for part in spec.split("+")])
        return joined, joined
    if spec == "run":  # its φ(s) (main refuses [φ(s), φ(g)]) and goal paths, if any
        assert run.cost_to_go is not None  # main refuses a run without one
        features = features_encoder(run.cost_to_go.encoder or run.encoder, run.cost_to_go.goal_paths)
        return features, None if features is run.encoder else features
    fitted = fit_features(spec, run.config.data.domain, [(task, states) for task, _, states in training])
    return fitted, fitted


def search_cells(run: LoadedModel, cost_to_go: RidgeCostToGo) -> list[str]:
    """Solved problems (mean plan length) of each --search_splits, best-first with `cost_to_go`."""
    for part in cost_to_go.encoder.parts if isinstance(cost_to_go.encoder, SideBySide) else [cost_to_go.encoder]:
        if isinstance(part, WLEncoder):
            part.use_fast = True  # the same vectors as wlplan's, faster; its times were taken already
    settings = _SETTINGS(run)
    cells = []
    for split in _SEARCH_SPLITS.value:
        checked, seconds = decode_split(run, _SEARCH_ROOT.value, run.config.data.domain, split, settings, cost_to_go)
        lengths = [len(r.plan) for r in checked if r.solved]
        mean = sum(lengths) / len(lengths) if lengths else math.nan
        cells.append(f"{len(lengths)}/{len(checked)} ({mean:.1f}; {seconds:.0f} s)")
    return cells


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
    refuse_test_splits("--search_splits", _SEARCH_SPLITS.value)
    run = load_run(_RUN.value)
    if run.cost_to_go is None:
        raise InputError(_RUN.value, "this run has no cost-to-go (config value.kind is none)")
    if run.config.value.features != "state":
        raise InputError(_RUN.value, "only a cost-to-go on φ(s) alone (config value.features=state) is refitted here")
    training = load_plans(training_records(run, _RUN.value))
    held_out = load_plans([record for path in _HELD_OUT.value for record in read_trajectories(path)])
    print(f"{len(training)} training plans, {len(held_out)} held-out plans")
    training_pairs, held_out_pairs = plan_pairs(training), plan_pairs(held_out)
    print_header([*COLUMNS, *(f"search {split}: solved (mean length; decoding s)" for split in _SEARCH_SPLITS.value)])
    ties = []
    for spec in _FEATURES.value:
        features, encoder = feature_embedding(run, spec, training)
        dim = features.dim
        refuse_what_would_not_fit(spec, len(training_pairs) + len(held_out_pairs), dim)
        data = orderings(training_pairs, features.embed_with_unseen)
        test = orderings(held_out_pairs, features.embed_with_unseen) if held_out else None
        for rank_weight in (float(w) for w in _RANK_WEIGHTS.value):
            w, b = fit(data, run.cost_to_go.alpha, rank_weight)
            cells = [spec, str(dim), f"{rank_weight:g}", *(f"{x:.3f}" for x in data.shares(w, b))]
            if test is not None:
                negative = float(np.mean(test.states @ w + b < 0))
                cells += [f"{x:.3f}" for x in (*test.shares(w, b, clamped=True), negative, test.unseen)]
                cells.append(f"{1000 * test.seconds_per_state:.2f}")
            else:
                cells += ["-"] * 6
            if _SEARCH_SPLITS.value:  # [φ(s), φ(g)] weights, zero on φ(g), as value.fit saves them
                weights = np.concatenate([w, np.zeros_like(w)])
                cells += search_cells(run, RidgeCostToGo(weights, b, run.cost_to_go.alpha, encoder))
            print("| " + " | ".join(cells) + " |", flush=True)
        tied_along = np.all(data.states[data.along[:, 0]] == data.states[data.along[:, 1]], axis=1)
        tied_against = np.all(data.states[data.against[:, 0]] == data.siblings[data.against[:, 1]], axis=1)
        ties.append(f"{spec}: equal features: {tied_along.mean():.3f} of steps, {tied_against.mean():.3f} of siblings")
    print("\n" + "\n".join(ties))


if __name__ == "__main__":
    run_main(main)
