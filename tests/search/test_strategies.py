"""Search strategies on oracle and uninformed models: known plans, budgets, backtracking."""

import collections
import dataclasses
import heapq
import itertools
import subprocess
import sys

import numpy as np
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.embedding.encoders import fit_encoder
from statecentric_jax.errors import InputError
from statecentric_jax.planning import packing
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.relaxed import RelaxedReachability
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import Operator, load_task
from statecentric_jax.search import expander, open_lists, scoring
from statecentric_jax.search.base import STRATEGIES, DecodeConfig, decode_config
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import DecodeStats
from tests.planning.test_relaxed import reachable_states
from tests.search.blocks import DOMAIN, PLANS, AtomEncoder, OracleModel, problem

GUIDED = ["beam_backtrack", "restarts", "best_first"]


class FixedTargetModel:
    """An uninformed model: always predicts the same random vector (no carry)."""

    def __init__(self, dim, seed):
        self.target = np.random.default_rng(seed).random(dim).astype(np.float32)

    def init_carry(self, batch_size):
        return None

    def predict_next(self, states, goals, carry):
        return np.tile(self.target, (len(states), 1)), carry


class ReadsModelEmbedding:
    """A cost-to-go test double whose features are the transition model's embeddings."""

    reads_model_embedding = True

    def embed(self, pairs, parents, embeddings):
        return embeddings


class OracleCostToGo(ReadsModelEmbedding):
    """True remaining plan length of every reachable state (breadth-first search backwards)."""

    def __init__(self, encoder, tasks):
        self.remaining = {}
        for task in tasks:
            goal = encoder.embed_goals([task])[0].tobytes()
            for state, steps in _goal_distances(task).items():
                self.remaining[(encoder.embed([(task, state)])[0].tobytes(), goal)] = steps

    def estimate(self, states, goals):
        return np.array([self.remaining[(s.tobytes(), g.tobytes())] for s, g in zip(states, goals)], np.float32)


def _goal_distances(task):
    generator = SuccessorGenerator(task)
    parents, frontier, seen = collections.defaultdict(set), [task.init], {task.init}
    while frontier:
        state = frontier.pop()
        for _, nxt in generator.successors(state):
            parents[nxt].add(state)
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    distance = {s: 0 for s in seen if task.goal_reached(s)}
    queue = collections.deque(distance)
    while queue:
        state = queue.popleft()
        for parent in parents[state]:
            if parent not in distance:
                distance[parent] = distance[state] + 1
                queue.append(parent)
    return distance


@pytest.mark.parametrize("strategy", GUIDED)
def test_oracle_model_gives_the_known_plans(tasks, strategy):
    encoder = AtomEncoder()
    model = OracleModel(encoder, tasks, {t.name: PLANS[t.name] for t in tasks})  # carry = step counter
    results = decode(tasks, model, encoder, DecodeConfig(strategy=strategy, beam_width=1, metric="euclidean"))
    assert [r.plan for r in results] == [PLANS[t.name] for t in tasks]
    assert all(r.solved for r in results)


def test_backtracking_recovers_from_the_beams_dead_end(towers):
    encoder, model = AtomEncoder(), FixedTargetModel(AtomEncoder().dim, seed=0)
    settings = dict(beam_width=1, metric="euclidean", horizon_base=40, budget=2000)
    beam = decode(towers[:1], model, encoder, DecodeConfig(strategy="beam", **settings))[0]
    backtracked = decode(towers[:1], model, encoder, DecodeConfig(strategy="beam_backtrack", **settings))[0]
    assert beam.outcome == "dead end"
    assert backtracked.solved
    simulate(towers[0], backtracked.plan)  # raises unless the plan reaches the goal


def test_best_first_is_complete_and_cost_to_go_makes_it_optimal(towers):
    encoder, model = AtomEncoder(), FixedTargetModel(AtomEncoder().dim, seed=0)
    blind = decode(towers, model, encoder, DecodeConfig(strategy="best_first", metric="euclidean", budget=5000))
    assert all(r.solved for r in blind)
    guided = decode(
        towers,
        model,
        encoder,
        DecodeConfig(strategy="best_first", metric="euclidean"),
        cost_to_go=OracleCostToGo(encoder, towers),
    )
    assert [len(r.plan) for r in guided] == [_goal_distances(t)[t.init] for t in towers]
    assert all(r.solved for r in guided)


def pop_unexpanded(queue: list, done: set, tie_at: int, horizon: int):
    """The lowest queue entry not popped before (its tie number at `tie_at`) whose plan (entry 4) is within the
    horizon; None when the queue runs out."""
    while queue:
        entry = heapq.heappop(queue)
        if entry[tie_at] not in done:
            done.add(entry[tie_at])
            if len(entry[4]) < horizon:
                return entry
    return None


def reference_best_first(task, model, encoder, config, cost_to_go=None, values_read=None):
    """Greedy best-first search the plain way, one node at a time, every node whole: the plan or None,
    and the nodes it expanded; each cost-to-go estimate a priority is made of is added to `values_read`.
    With novelty exploration, every other node comes from a second heap ordered by (width, priority);
    with preferred exploration, from a heap by priority of the children nearest their parent's prediction;
    with greedy exploration, from a heap by priority without the path term;
    with relaxed_plan exploration, from a heap by the parent's FF heuristic, its helpful actions' children first
    (with estimate_helpful_only, the other children only there); with preferred_boost, a third heap of the helpful
    actions' children alone joins the turns, each turn going to the heap taken least, and a relaxed plan shorter
    than any before gives it that many turns."""
    generator, goal = SuccessorGenerator(task), encoder.embed_goals([task])[0]
    closed, tie, expanded, done = {task.init}, itertools.count(), 0, set()
    atoms_seen = collections.defaultdict(set)  # rounded cost-to-go -> atoms of the states generated with it
    heap = [((0.0,), next(tie), task.init, encoder.embed([(task, task.init)])[0], [], 0.0, model.init_carry(1))]
    second: list = []
    preferred: list = []
    turns, shortest = [0, 0, 0], float("inf")

    def pop(queue):
        return pop_unexpanded(queue, done, 1, config.horizon(task))

    while True:
        turn = min(range(3 if config.preferred_boost else 2), key=turns.__getitem__)
        turns[turn] += 1
        entry = (pop([second, preferred][turn - 1]) if turn else None) or pop(heap)
        if entry is None:
            return None, expanded
        _, _, state, embedding, plan, score, carry = entry
        target, child_carry = model.predict_next(embedding[None], goal[None], carry)
        children = [(op.name, s) for op, s in generator.successors(state) if s not in closed]
        expanded += 1
        if config.exploration == "relaxed_plan":
            estimate, helpful = RelaxedReachability(task).relaxed_plan(state)
        if children:
            embeddings = encoder.embed([(task, s) for _, s in children], [state] * len(children))
            distances = scoring.distances(np.repeat(target, len(children), 0), embeddings, config.metric)
            if cost_to_go is not None:
                values = cost_to_go.estimate(embeddings, np.repeat(goal[None], len(children), 0))
        for i, (action, child) in enumerate(children):
            if child in closed:
                continue
            closed.add(child)
            summed, distance = float(np.float32(score) + distances[i]), float(distances[i])
            if task.goal_reached(child):
                return [*plan, action], expanded
            if cost_to_go is not None:
                if values_read is not None:
                    values_read.append(float(values[i]))
                value = float(values[i]) + config.value_weight * distance
                priority = (value + config.path_weight * (len(plan) + 1), distance)
            else:
                priority = (summed if config.priority == "cumulative" else distance,)
            node = (next(tie), child, embeddings[i], [*plan, action], summed, child_carry)
            if not (config.estimate_helpful_only and action not in helpful):
                heapq.heappush(heap, (priority, *node))
            if cost_to_go is not None and config.exploration == "novelty":
                seen = atoms_seen[round(float(values[i]))]
                heapq.heappush(second, ((1 if child - seen else 2, *priority, node[0]), *node))
                seen |= child
            if cost_to_go is not None and config.exploration == "preferred" and distances[i] == distances.min():
                heapq.heappush(second, ((*priority, node[0]), *node))
            if cost_to_go is not None and config.exploration == "greedy":
                heapq.heappush(second, ((float(values[i]) + config.value_weight * distance, distance, node[0]), *node))
            if cost_to_go is not None and config.exploration == "relaxed_plan" and estimate != float("inf"):
                heapq.heappush(second, ((estimate, action not in helpful, node[0]), *node))
                if config.preferred_boost and action in helpful:
                    heapq.heappush(preferred, ((estimate, node[0]), *node))
        if config.preferred_boost and estimate < shortest:
            shortest = estimate
            turns[2] -= config.preferred_boost
        if expanded >= config.budget:
            return None, expanded


class ShiftModel:
    """Predicts the node's own embedding plus a fixed random step, so every node's φ matters."""

    def __init__(self, dim, seed):
        self.step = np.random.default_rng(seed).normal(size=dim).astype(np.float32)

    def init_carry(self, batch_size):
        return None

    def predict_next(self, states, goals, carry):
        return states + self.step, carry


class LinearCostToGo(ReadsModelEmbedding):
    """A fixed random linear cost-to-go (ties are rare, so the order of expansions is strict)."""

    def __init__(self, dim, seed):
        self.weights = np.random.default_rng(seed).random(dim).astype(np.float32)

    def estimate(self, states, goals):
        return states @ self.weights


class RoundedCostToGo(LinearCostToGo):
    """A linear cost-to-go rounded to whole steps: many open nodes share a priority, and the distance decides."""

    def estimate(self, states, goals):
        return np.round(super().estimate(states, goals))


class CountingModel(ShiftModel):
    def __init__(self, dim, seed):
        super().__init__(dim, seed)
        self.rows = 0

    def predict_next(self, states, goals, carry):
        self.rows += len(states)
        return super().predict_next(states, goals, carry)


@pytest.mark.parametrize("encoding", ["atoms", "wl"])
@pytest.mark.parametrize(
    ("guidance", "keys"),
    [
        *(
            (guidance, "bits")
            for guidance in (
                "cumulative",
                "last",
                "cost-to-go",
                "rounded cost-to-go",
                "rounded cost-to-go + path",
                "cost-to-go + distance",
                "cost-to-go + path",
                "cost-to-go + novelty exploration",
                "cost-to-go + preferred exploration",
                "cost-to-go + path + greedy exploration",
                "cost-to-go + relaxed_plan exploration",
                "rounded cost-to-go + path + relaxed_plan exploration",
                "cost-to-go + helpful only + relaxed_plan exploration",
                "rounded cost-to-go + path + helpful only + relaxed_plan exploration",
                "cost-to-go + helpful only + relaxed_plan exploration boosted by 3",
                "rounded cost-to-go + path + helpful only + relaxed_plan exploration boosted by 1000",
            )
        ),
        ("rounded cost-to-go + path", "numbered"),
        ("cost-to-go + novelty exploration", "numbered"),
    ],
)
def test_best_first_equals_a_plain_reference(tasks, towers, encoding, guidance, keys, monkeypatch):
    """Batched, with packed open nodes that are embedded again when expanded (keys of either kind,
    `planning/packing.py`): the same plans."""
    if keys == "numbered":
        monkeypatch.setattr(packing, "PRECOMPUTED_ATOMS", 0)
        monkeypatch.setattr(packing, "NUMBERED_KEYS_BELOW", float("inf"))
        assert isinstance(packing.StatePacker(tasks[0]).pack(tasks[0].init), bytes)
    problems = tasks + towers
    encoder = AtomEncoder() if encoding == "atoms" else fit_encoder("wl", "blocks", [(t, [t.init]) for t in problems])
    model, cost_to_go = ShiftModel(encoder.dim, seed=2), None
    config = DecodeConfig(strategy="best_first", metric="euclidean", budget=200, horizon_base=12)
    if "cost-to-go" in guidance:
        cost_to_go = (RoundedCostToGo if guidance.startswith("rounded") else LinearCostToGo)(encoder.dim, seed=3)
        weights = {
            "value_weight": 1.0 if "distance" in guidance else 0.0,
            "path_weight": 0.5 if "path" in guidance else 0.0,
            "exploration": guidance.split(" + ")[-1].split()[0] if "exploration" in guidance else "none",
            "estimate_helpful_only": "helpful only" in guidance,
            "preferred_boost": int(guidance.split(" boosted by ")[1]) if "boosted" in guidance else 0,
        }
        config = dataclasses.replace(config, **weights)
    else:
        config = dataclasses.replace(config, priority=guidance)
    results = decode(problems, model, encoder, config, cost_to_go=cost_to_go)
    expected = [reference_best_first(t, model, encoder, config, cost_to_go) for t in problems]
    assert [(r.plan if r.solved else None, r.steps) for r in results] == expected
    assert sum(plan is not None for plan, _ in expected) >= 3 and any(len(p or []) > 3 for p, _ in expected)


class LoweredCostToGo(LinearCostToGo):
    """A linear cost-to-go less a constant, read as zero below zero where `clipped` (as `RidgeCostToGo`)."""

    def __init__(self, dim, seed, lowered_by, clipped):
        super().__init__(dim, seed)
        self.lowered_by, self.clipped = lowered_by, clipped

    def estimate(self, states, goals):
        estimate = super().estimate(states, goals) - self.lowered_by
        return np.maximum(estimate, 0.0) if self.clipped else estimate


@pytest.mark.parametrize("lowered_by", [0.0, 4.0, 16.0])
def test_estimates_read_at_or_below_zero_are_counted_and_where_none_are_unclipped_searches_alike(
    tasks, towers, lowered_by
):
    """Each problem's result counts the estimates at or below zero its search read, as a plain search reads
    them (a goal child ends the search unread, a closed one is not read); where there are none, the search
    with estimates below zero kept is the same search."""
    problems = tasks + towers
    encoder = fit_encoder("wl", "blocks", [(t, [t.init]) for t in problems])
    model = ShiftModel(encoder.dim, seed=2)
    config = DecodeConfig(strategy="best_first", metric="euclidean", budget=200, horizon_base=12, path_weight=0.5)
    config = dataclasses.replace(config, exploration="relaxed_plan")
    clipped, unclipped = (LoweredCostToGo(encoder.dim, 3, lowered_by, clip) for clip in (True, False))
    results = decode(problems, model, encoder, config, cost_to_go=clipped)
    for task, result in zip(problems, results):
        read: list[float] = []
        reference_best_first(task, model, encoder, config, clipped, read)
        assert result.estimates_at_most_zero == sum(value <= 0 for value in read)
    kept = decode(problems, model, encoder, config, cost_to_go=unclipped)
    for result, other in zip(results, kept):
        if not result.estimates_at_most_zero:
            assert (other.plan, other.steps, other.estimates_at_most_zero) == (result.plan, result.steps, 0)
    counted = [r.estimates_at_most_zero > 0 for r in results]
    assert any(counted) == (lowered_by > 0)
    if lowered_by == 16.0:  # where estimates below zero are read, keeping them can change the search
        assert any((r.plan, r.steps) != (o.plan, o.steps) for r, o in zip(results, kept))


def test_the_model_is_asked_only_where_its_distance_breaks_a_tie(tasks, towers):
    """With value_weight 0 and no exploration queue, the distance only orders open nodes of equal priority."""
    problems = tasks + towers
    encoder = AtomEncoder()
    config = DecodeConfig(strategy="best_first", metric="euclidean", budget=200, horizon_base=12)
    rows = {}
    for name, cost_to_go in (("strict", LinearCostToGo(encoder.dim, 3)), ("ties", RoundedCostToGo(encoder.dim, 3))):
        model = CountingModel(encoder.dim, seed=2)
        results = decode(problems, model, encoder, config, cost_to_go=cost_to_go)
        rows[name] = model.rows, sum(r.expanded for r in results)
    assert rows["strict"][0] < rows["strict"][1] / 4  # the root's carry only, and few ties
    assert rows["ties"][0] > 0
    model = CountingModel(encoder.dim, seed=2)  # where the distance is part of the priority: every expansion asks
    results = decode(problems, model, encoder, dataclasses.replace(config, value_weight=1.0), cost_to_go=cost_to_go)
    assert model.rows == sum(r.expanded for r in results)


def test_a_parent_is_predicted_once_for_all_its_tied_children(tasks, towers, monkeypatch):
    """The model's prediction for a node whose children tie is kept (`Expander.tie_distances`): each expanded
    node is asked for once at most, and the plans are those of a search that keeps none."""
    problems = tasks + towers
    encoder = AtomEncoder()
    config = DecodeConfig(strategy="best_first", metric="euclidean", budget=200, horizon_base=12)
    runs = {}
    for kept_bytes in (expander.TIE_TARGET_BYTES, 0):
        monkeypatch.setattr(expander, "TIE_TARGET_BYTES", kept_bytes)
        model = CountingModel(encoder.dim, seed=2)
        results = decode(problems, model, encoder, config, cost_to_go=RoundedCostToGo(encoder.dim, 3))
        runs[kept_bytes] = [(r.plan, r.expanded) for r in results], model.rows
    (kept, kept_rows), (none, none_rows) = runs.values()
    assert kept == none
    assert 0 < kept_rows < none_rows and kept_rows <= sum(expanded for _, expanded in kept)


class OwnFeaturesCostToGo(RoundedCostToGo):
    """A rounded linear cost-to-go on features of its own (the atoms), not on the model's embeddings."""

    def __init__(self, dim, seed, reads_model_embedding):
        super().__init__(dim, seed)
        self.own, self.reads_model_embedding, self.given = AtomEncoder(), reads_model_embedding, []

    def embed(self, pairs, parents, embeddings):
        self.given.append(embeddings)
        return self.own.embed(pairs, parents)


def test_successors_are_not_embedded_for_a_model_that_is_not_asked(tasks, towers):
    problems = tasks + towers
    encoder = fit_encoder("wl", "blocks", [(t, [t.init]) for t in problems])
    config = DecodeConfig(strategy="best_first", metric="euclidean", budget=200, horizon_base=12)
    runs = {}
    for reads in (True, False):
        cost_to_go = OwnFeaturesCostToGo(AtomEncoder().dim, 3, reads)
        results = decode(problems, ShiftModel(encoder.dim, seed=2), encoder, config, cost_to_go=cost_to_go)
        runs[reads] = [(r.plan, r.expanded) for r in results], {g is None for g in cost_to_go.given}
    assert runs[True][0] == runs[False][0] and runs[True][1] == {False} and runs[False][1] == {True}


class CountingOwnFeatures(OwnFeaturesCostToGo):
    def __init__(self, dim, seed, reads_model_embedding):
        super().__init__(dim, seed, reads_model_embedding)
        self.rows = 0

    def embed(self, pairs, parents, embeddings):
        self.rows += len(pairs)
        assert embeddings is None or len(embeddings) == len(pairs)
        return super().embed(pairs, parents, embeddings)


@pytest.mark.parametrize("reads", [True, False])
def test_with_estimate_helpful_only_only_helpful_children_are_estimated(tasks, towers, reads, monkeypatch):
    """The cost-to-go's features are made only for the children of helpful actions (its own φ, or the model's
    embeddings it reads); the plans are the plain reference's. With its own φ and the model's distances read
    only where they break ties, the other children's states are not even built: they stay keys."""
    problems = tasks + towers
    encoder = AtomEncoder()  # the model's φ is the cost-to-go's own: the reference estimates on it
    config = DecodeConfig(
        strategy="best_first",
        metric="euclidean",
        budget=200,
        horizon_base=12,
        path_weight=0.5,
        exploration="relaxed_plan",
    )
    rows, generated, built = {}, {}, {}
    apply = Operator.apply
    applied: list[Operator] = []  # operators applied, in the decode under way

    def counted(op, state):
        applied.append(op)
        return apply(op, state)

    for helpful_only in (False, True):
        settings = dataclasses.replace(config, estimate_helpful_only=helpful_only)
        cost_to_go = CountingOwnFeatures(encoder.dim, 3, reads)
        model = ShiftModel(encoder.dim, seed=2)
        stats = DecodeStats()
        applied.clear()
        monkeypatch.setattr(Operator, "apply", counted)
        results = decode(problems, model, encoder, settings, stats=stats, cost_to_go=cost_to_go)
        monkeypatch.undo()
        built[helpful_only] = len(applied)
        expected = [reference_best_first(t, model, encoder, settings, cost_to_go) for t in problems]
        assert [(r.plan if r.solved else None, r.steps) for r in results] == expected
        assert sum(plan is not None for plan, _ in expected) >= 3
        rows[helpful_only], generated[helpful_only] = cost_to_go.rows, stats.generated
    assert rows[False] >= generated[False]  # every child (and the expanded nodes embedded again)
    assert 0 < rows[True] < generated[True] * 0.6
    assert built[False] >= generated[False] * 0.9  # children reached from two expanded nodes at once: built once
    if reads:  # the model's embeddings of every child are read
        assert built[True] >= generated[True] * 0.9
    else:
        assert 0 < built[True] < generated[True] * 0.6


@pytest.mark.parametrize(("name", "value"), [("estimate_helpful_only", True), ("preferred_boost", 1000)])
@pytest.mark.parametrize(
    "settings", [{"strategy": "best_first"}, {"strategy": "lazy_best_first", "exploration": "relaxed_plan"}]
)
def test_helpful_children_settings_need_eager_best_first_with_the_relaxed_plan_queue(settings, name, value):
    with pytest.raises(InputError, match=f"{name} .* needs decode.strategy=best_first and decode.exploration"):
        DecodeConfig(**{name: value}, **settings)
    assert name not in DecodeConfig(**settings).identity()
    chosen = DecodeConfig(strategy="best_first", exploration="relaxed_plan", **{name: value})
    assert chosen.identity()[name] == value


def test_a_boost_hands_turns_to_the_helpful_childrens_queue(tasks, towers):
    """With `preferred_boost`, the search differs from the one without it (the plain reference checks it turn by
    turn), and a boost of 0 keeps the two-queue alternation."""
    problems = tasks + towers
    encoder = AtomEncoder()
    model, cost_to_go = ShiftModel(encoder.dim, seed=2), RoundedCostToGo(encoder.dim, seed=3)
    config = DecodeConfig(
        strategy="best_first", metric="euclidean", budget=200, horizon_base=12, exploration="relaxed_plan"
    )
    runs = {}
    for boost in (0, 1000):
        settings = dataclasses.replace(config, preferred_boost=boost)
        results = decode(problems, model, encoder, settings, cost_to_go=cost_to_go)
        runs[boost] = [(r.plan if r.solved else None, r.steps) for r in results]
        assert runs[boost] == [reference_best_first(t, model, encoder, settings, cost_to_go) for t in problems]
    assert runs[0] != runs[1000]


def reference_lazy_best_first(task, model, encoder, config, cost_to_go):
    """Deferred evaluation the plain way, one node at a time: a node's cost-to-go is estimated when it is
    expanded, and its children are queued with it (+ path_weight x their depth); where the model is asked
    (value_weight > 0, preferred exploration), + value_weight x each child's distance to the node's
    prediction, which then also breaks ties, and the children nearest it go to a second queue too, taken
    every other expansion. Generation order last. The plan or None, and the nodes expanded."""
    generator, goal = SuccessorGenerator(task), encoder.embed_goals([task])[0]
    closed, parent_of, tie, expanded, done = {task.init}, {task.init: None}, itertools.count(), 0, set()
    heap, preferred = [(0.0, 0.0, next(tie), task.init, [])], []
    asked = config.value_weight > 0 or config.exploration == "preferred"

    def pop(queue):
        return pop_unexpanded(queue, done, 2, config.horizon(task))

    for round_ in itertools.count(1):
        entry = (pop(preferred) if round_ % 2 == 0 else None) or pop(heap)
        if entry is None:
            return None, expanded
        _, _, _, state, plan = entry
        embedding = encoder.embed([(task, state)], [parent_of[state]])
        features = cost_to_go.embed([(task, state)], [parent_of[state]], embedding)
        value = float(cost_to_go.estimate(features, goal[None])[0])
        children = [(op.name, s) for op, s in generator.successors(state) if s not in closed]
        distances = np.zeros(len(children), np.float32)
        if asked and children:
            target, _ = model.predict_next(embedding, goal[None], None)
            embeddings = encoder.embed([(task, s) for _, s in children], [state] * len(children))
            distances = scoring.distances(np.repeat(target, len(children), 0), embeddings, config.metric)
        expanded += 1
        for (action, child), distance in zip(children, distances.tolist()):
            if child in closed:
                continue
            closed.add(child)
            parent_of[child] = state
            if task.goal_reached(child):
                return [*plan, action], expanded
            priority = value + config.value_weight * distance + config.path_weight * (len(plan) + 1)
            node = (priority, distance, next(tie), child, [*plan, action])
            heapq.heappush(heap, node)
            if config.exploration == "preferred" and distance == distances.min():
                heapq.heappush(preferred, node)
        if expanded >= config.budget:
            return None, expanded


class CountingCostToGo(RoundedCostToGo):
    def __init__(self, dim, seed):
        super().__init__(dim, seed)
        self.rows = 0

    def estimate(self, states, goals):
        self.rows += len(states)
        return super().estimate(states, goals)


@pytest.mark.parametrize("encoding", ["atoms", "wl"])
@pytest.mark.parametrize(
    "guidance",
    ["cost-to-go", "rounded cost-to-go + path", "cost-to-go + distance", "cost-to-go + preferred exploration"],
)
def test_lazy_best_first_equals_a_plain_reference(tasks, towers, encoding, guidance):
    """Deferred evaluation, batched across problems, with packed open nodes: the plain search's plans."""
    problems = tasks + towers
    encoder = AtomEncoder() if encoding == "atoms" else fit_encoder("wl", "blocks", [(t, [t.init]) for t in problems])
    model = ShiftModel(encoder.dim, seed=2)
    cost_to_go = (RoundedCostToGo if guidance.startswith("rounded") else LinearCostToGo)(encoder.dim, seed=3)
    config = DecodeConfig(
        strategy="lazy_best_first",
        metric="euclidean",
        budget=200,
        horizon_base=12,
        value_weight=1.0 if "distance" in guidance else 0.0,
        path_weight=0.5 if "path" in guidance else 0.0,
        exploration="preferred" if "preferred" in guidance else "none",
    )
    results = decode(problems, model, encoder, config, cost_to_go=cost_to_go)
    expected = [reference_lazy_best_first(t, model, encoder, config, cost_to_go) for t in problems]
    assert [(r.plan if r.solved else None, r.steps) for r in results] == expected
    assert sum(plan is not None for plan, _ in expected) >= 3 and any(len(p or []) > 3 for p, _ in expected)
    for task, result in zip(problems, results):
        if result.solved:
            simulate(task, result.plan)


def test_lazy_best_first_estimates_one_state_per_expansion_and_is_reproducible(tasks, towers):
    problems = tasks + towers
    encoder = AtomEncoder()
    config = DecodeConfig(strategy="best_first", metric="euclidean", budget=200, horizon_base=12, path_weight=0.5)
    runs = {}
    for strategy in ("best_first", "lazy_best_first", "lazy_best_first"):
        cost_to_go, model = CountingCostToGo(encoder.dim, 3), CountingModel(encoder.dim, seed=2)
        results = decode(
            problems, model, encoder, dataclasses.replace(config, strategy=strategy), cost_to_go=cost_to_go
        )
        expanded = sum(r.expanded for r in results)
        runs.setdefault(strategy, []).append(([r.plan for r in results], expanded, cost_to_go.rows, model.rows))
    ((_, eager_expanded, eager_rows, _),) = runs["best_first"]
    first, again = runs["lazy_best_first"]
    assert first == again  # same run, same plans
    _, expanded, rows, model_rows = first
    assert rows == expanded and model_rows == 0  # one estimate per expanded node; no model call
    assert eager_rows > eager_expanded  # eager search estimates every generated child


def test_lazy_best_first_needs_a_cost_to_go(tasks):
    encoder = AtomEncoder()
    config = DecodeConfig(strategy="lazy_best_first", metric="euclidean")
    with pytest.raises(InputError, match="lazy_best_first defers a cost-to-go's estimates: it needs one"):
        decode(tasks[:1], ShiftModel(encoder.dim, seed=2), encoder, config)


def test_type_exploration_draws_a_random_type_then_a_random_node():
    drawn = collections.Counter()
    for seed in range(400):
        types = open_lists.RandomOfRandomType(seed)
        types.add(("rare",), "r")
        for i in range(99):
            types.add(("common",), i)
        first = types.pop()
        drawn[first == "r"] += 1  # a type first: "r" half the time, not one time in a hundred
        assert sorted(map(str, [first, *iter(types.pop, None)])) == sorted(["r", *map(str, range(99))])  # each once
    assert 150 < drawn[True] < 250


def test_type_exploration_is_reproducible_and_leaves_the_greedy_order(tasks, towers):
    problems = tasks + towers
    encoder = AtomEncoder()
    model, cost_to_go = ShiftModel(encoder.dim, seed=2), LinearCostToGo(encoder.dim, seed=3)
    config = DecodeConfig(strategy="best_first", metric="euclidean", budget=400, horizon_base=40)
    greedy = decode(problems, model, encoder, config, cost_to_go=cost_to_go)
    typed = dataclasses.replace(config, exploration="type")
    first, again = (decode(problems, model, encoder, typed, cost_to_go=cost_to_go) for _ in range(2))
    alone = [decode([t], model, encoder, typed, cost_to_go=cost_to_go)[0] for t in problems]
    assert [r.plan for r in first] == [r.plan for r in again] == [r.plan for r in alone]  # batching is irrelevant
    assert [r.steps for r in first] != [r.steps for r in greedy]
    for task, result in zip(problems, first):
        assert result.solved and result.steps <= 400
        simulate(task, result.plan)


@pytest.mark.parametrize("strategy", GUIDED)
def test_budget_is_respected(tmp_path, strategy):
    (tmp_path / "domain.pddl").write_text(DOMAIN)
    (tmp_path / "never.pddl").write_text(problem("never", list("abc"), "(on a a)"))  # unreachable goal
    task = load_task(tmp_path / "domain.pddl", tmp_path / "never.pddl")
    encoder = AtomEncoder()
    config = DecodeConfig(strategy=strategy, budget=5, beam_width=1, metric="euclidean")
    result = decode([task], FixedTargetModel(encoder.dim, seed=1), encoder, config)[0]
    assert result.outcome == "budget" and not result.solved
    assert result.steps <= 5


def test_best_first_exhausts_a_finite_space_into_a_dead_end(tmp_path):
    (tmp_path / "domain.pddl").write_text(DOMAIN)
    (tmp_path / "never.pddl").write_text(problem("never", list("abc"), "(on a a)"))
    task = load_task(tmp_path / "domain.pddl", tmp_path / "never.pddl")
    encoder = AtomEncoder()
    config = DecodeConfig(strategy="best_first", metric="euclidean")
    result = decode([task], FixedTargetModel(encoder.dim, seed=1), encoder, config)[0]
    assert result.outcome == "dead end"
    assert result.steps == len(reachable_states(task))  # every reachable state expanded exactly once


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(strategy="dfs"), "unknown decoding strategy 'dfs'"),
        (dict(budget=0), "budget=0"),
        (dict(goal_agenda=-1), "decode.goal_agenda=-1 must be at least 0"),
        (dict(beam_width=0), "beam_width=0"),
        (dict(max_in_flight=0), "max_in_flight=0"),
        (dict(priority="random"), "unknown best-first priority"),
        (
            dict(exploration="epsilon"),
            "exploration 'epsilon' \\(use none, type, novelty, preferred, greedy, relaxed_plan\\)",
        ),
        (dict(exploration="greedy"), "exploration 'greedy' drops the path term: it needs decode.path_weight > 0"),
        (dict(metric="manhattan"), "unknown decoding metric"),
    ],
)
def test_bad_settings_are_one_line_errors(settings, message):
    with pytest.raises(InputError, match=message):
        DecodeConfig(**settings)


def test_an_unknown_override_of_a_runs_settings_is_one_line():
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    assert decode_config(config, strategy="best_first", beam_width=None).strategy == "best_first"
    with pytest.raises(InputError, match="unknown decoding setting\\(s\\) beam, budgets \\(use beam_width"):
        decode_config(config, budgets=3, beam=2)


def test_every_strategy_is_offered_on_the_command_line():
    out = subprocess.run(
        [sys.executable, "launch/evaluate.py", "--workdir=x", "--strategy=dfs"], capture_output=True, text=True
    )
    assert out.returncode != 0 and all(name in out.stderr for name in STRATEGIES)
