"""Search strategies: which nodes to expand next, and when an instance is done.

Every strategy is a small object per instance with `select()` (the nodes to expand this
round, each with the states its expansion must skip) and `update(expansions)` (take the
children; return (outcome, node to report) when the instance stops). The expander does
all model, embedding and distance work, batched across instances.

- `beam` (the paper): keep the `beam_width` paths with the lowest sum of step distances;
  a path never revisits its own states; stop at the goal, a dead end, or the horizon.
- `beam_backtrack`: the same beam, but on a dead end or at the horizon it resumes from the
  best candidates it passed over earlier (lowest summed distance) instead of failing, until
  the node budget is spent.
- `best_first`: greedy best-first search with one closed list per instance and a node
  budget, complete on finite state spaces. Priority: the summed or last-step distance to
  the model's predictions, or a learned cost-to-go (plus `value_weight` × distance, plus
  `path_weight` × the plan length so far, as weighted A* does; the distance breaks ties).
  With a cost-to-go and `exploration`, every other expansion comes from a second queue, as
  planners alternate queues against plateaus and local minima of their heuristic:
  `type`: a random open node of a random type (rounded cost-to-go, depth), seeded per
  problem (type-based exploration, Xie et al. 2014), which reads no signal but the learned
  one; `novelty`: the open node of lowest (width, priority), width 1 when the state holds
  an atom that no state generated before with the same rounded cost-to-go held (best-first
  width search, Lipovetzky and Geffner 2017), a symbolic, domain-independent signal;
  `preferred`: the open node of lowest priority among those the transition model preferred,
  each the child nearest its parent's prediction (a learned policy's preferred successors, as
  planners keep a queue of preferred operators' successors: Richter and Helmert 2009);
  `greedy`: the open node of lowest priority without the `path_weight` term, so greedy
  best-first search alternates with the weighted one, as planners alternate queues over one
  heuristic (Röger and Helmert 2010), so that a basin of the weighted search is left sooner
  (for Logistics it moved which problems fail: docs/log.md).
- `restarts`: the paper's beam; when it fails, start again with twice the width, until the
  node budget is spent.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import math
import operator
import random
from collections.abc import Container, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from statecentric_jax.planning.packing import PackedStates, StatePacker
from statecentric_jax.search.base import DecodeConfig, Instance, Outcome
from statecentric_jax.search.expander import Expansion, Node

Stop = tuple[Outcome, Node | None]


class Strategy(Protocol):
    def select(self) -> list[tuple[Node, Container]]: ...

    def update(self, expansions: Sequence[Expansion]) -> Stop | None: ...


def _ranked(expansions: Sequence[Expansion]) -> list[tuple[float, Expansion, int]]:
    """All children by summed distance (parent's score + step distance, float32); ties keep
    the order of beam slot, then operator. Non-finite sums are dropped. (Python's stable sort
    on the exact float32 values: for a dozen children it is cheaper than NumPy's.)"""
    ranked = []
    for expansion in expansions:
        totals = (np.float32(expansion.node.score) + expansion.distances).tolist()
        ranked += [(total, expansion, c) for c, total in enumerate(totals) if math.isfinite(total)]
    ranked.sort(key=operator.itemgetter(0))
    return ranked


class BeamSearch:
    def __init__(self, inst: Instance, width: int):
        self.inst, self.width, self.steps = inst, width, 0
        inst.root.visited = {inst.root.state}
        self.beam = [inst.root]

    def select(self) -> list[tuple[Node, Container]]:
        return [(node, node.visited) for node in self.beam]  # type: ignore[misc]  # beam nodes have sets

    def update(self, expansions: Sequence[Expansion]) -> Stop | None:
        ranked = _ranked(expansions)
        return self._advance(ranked[: self.width], ranked[self.width :])

    def _advance(self, picked: Sequence[tuple[float, Expansion, int]], passed_over: Sequence) -> Stop | None:
        taken: collections.Counter = collections.Counter()
        beam = []
        for total, expansion, index in picked:
            child = expansion.child(index, total)
            taken[id(expansion)] += 1  # the first child takes over its parent's visited set
            parent_visited = expansion.node.visited
            assert parent_visited is not None
            child.visited = parent_visited if taken[id(expansion)] == 1 else set(parent_visited)
            beam.append(child)
        for node in beam:
            node.visited.add(node.state)  # type: ignore[union-attr]  # set just above
        previous_best, self.beam = self.beam[0], beam
        self.steps += 1
        goal = next((n for n in beam if self.inst.problem.task.goal_reached(n.state)), None)
        if goal is not None:
            return Outcome.GOAL, goal
        if not beam:
            return Outcome.DEAD_END, previous_best
        if beam[0].depth >= self.inst.horizon:
            return Outcome.HORIZON, beam[0]
        return None


class BacktrackingBeam(BeamSearch):
    def __init__(self, inst: Instance, width: int, budget: int):
        super().__init__(inst, width)
        self.budget, self.expanded = budget, 0
        self.alternatives: list = []  # heap of (summed distance, tie, expansion, index) passed over
        self.tie = itertools.count()

    def update(self, expansions: Sequence[Expansion]) -> Stop | None:
        self.expanded += len(expansions)
        ranked = _ranked(expansions)
        for total, expansion, index in ranked[self.width :]:
            heapq.heappush(self.alternatives, (total, next(self.tie), expansion, index))
        fallback = self.beam[0]
        stop = self._advance(ranked[: self.width], ())
        if stop is not None and stop[0] is not Outcome.GOAL:  # a dead end, or wandering to the horizon
            stop = self._backtrack(fallback if stop[1] is None else stop[1], stop[0])
        if stop is None and self.expanded >= self.budget:
            return Outcome.BUDGET, self.beam[0]
        return stop

    def _backtrack(self, fallback: Node, outcome: Outcome) -> Stop | None:
        """Resume from the best passed-over candidates that still fit the horizon."""
        beam: list[Node] = []
        while self.alternatives and len(beam) < self.width:
            total, _, expansion, index = heapq.heappop(self.alternatives)
            child = expansion.child(index, total)
            if child.depth < self.inst.horizon:
                child.visited = child.path_states()
                beam.append(child)
        if not beam:
            return outcome, fallback
        self.beam = beam
        return None


class Restarts:
    def __init__(self, inst: Instance, width: int, budget: int):
        self.inst, self.width, self.budget, self.expanded = inst, width, budget, 0
        self.attempt = BeamSearch(inst, width)

    def select(self) -> list[tuple[Node, Container]]:
        return self.attempt.select()

    def update(self, expansions: Sequence[Expansion]) -> Stop | None:
        self.expanded += len(expansions)
        stop = self.attempt.update(expansions)
        if stop is not None and stop[0] is Outcome.GOAL:
            return stop
        if self.expanded >= self.budget:
            return Outcome.BUDGET, stop[1] if stop is not None else self.attempt.beam[0]
        if stop is not None:
            self.width *= 2
            self.attempt = BeamSearch(self.inst, self.width)
        return None


class _Open(NamedTuple):
    """An open node of best-first search and its place in the queue, in one tuple (most are never expanded):
    ordered by priority, then tie-break, then tie (unique), so the fields after it are never compared."""

    priority: float
    tiebreak: float  # the transition model's distance when guided by a cost-to-go; 0 otherwise
    tie: int  # generation order
    key: int  # the state, packed
    action: str | None  # None: the root
    score: float
    parent: Node | None
    carry: Any


class _Types:
    """Open nodes by type, for drawing a random type and then a random node of it in O(1)."""

    def __init__(self, seed: int = 0):
        self.random = random.Random(seed)
        self.keys: list[tuple] = []  # the types with open nodes
        self.nodes: dict[tuple, list] = {}

    def add(self, key: tuple, item: Any) -> None:
        if key not in self.nodes:
            self.nodes[key] = []
            self.keys.append(key)
        self.nodes[key].append(item)

    def pop(self) -> Any | None:
        """A random item of a random type (removed), or None when there is none."""
        if not self.keys:
            return None
        k = self.random.randrange(len(self.keys))
        key = self.keys[k]
        items = self.nodes[key]
        i = self.random.randrange(len(items))
        items[i], items[-1] = items[-1], items[i]
        item = items.pop()
        if not items:
            del self.nodes[key]
            self.keys[k] = self.keys[-1]
            self.keys.pop()
        return item


class _Lowest:
    """Open nodes by a key of their own (unique), lowest first."""

    def __init__(self) -> None:
        self.heap: list = []

    def add(self, key: tuple, item: Any) -> None:
        heapq.heappush(self.heap, (key, item))

    def pop(self) -> Any | None:
        return heapq.heappop(self.heap)[1] if self.heap else None


class BestFirst:
    """Open nodes and the closed list hold packed states (`planning/packing.py`) and no embeddings, and an
    expanded node keeps none (docs/log.md, "Memory of best-first search"); a node becomes a `Node`
    again when it is expanded.
    With an exploration queue, every open node is in both queues; a node expanded from one is
    skipped when the other reaches it."""

    def __init__(self, inst: Instance, config: DecodeConfig, guided: bool):
        self.inst, self.config, self.guided = inst, config, guided
        self.packer = StatePacker(inst.problem.task)
        self.closed = PackedStates(self.packer)
        root = self.packer.pack(inst.root.state)
        self.closed.add(root)
        self.tie = itertools.count()
        self.open = [_Open(0.0, 0.0, next(self.tie), root, None, inst.root.score, None, inst.root.carry)]
        self.expanded, self.cut_by_horizon = 0, False
        exploring = guided and config.exploration != "none"
        self.exploration = (_Types() if config.exploration == "type" else _Lowest()) if exploring else None
        self.atoms_seen: dict[int, np.ndarray] = {}  # novelty: rounded cost-to-go -> atoms of states with it
        self.taken: set[int] = set()  # open nodes expanded already (from either queue)
        self.selections = 0

    def select(self) -> list[tuple[Node, Container]]:
        self.selections += 1
        if self.exploration is not None and self.selections % 2 == 0:
            while (picked := self.exploration.pop()) is not None:
                if (node := self._admit(picked)) is not None:
                    return [(node, self.closed)]
        while self.open:
            if (node := self._admit(heapq.heappop(self.open))) is not None:
                return [(node, self.closed)]
        return []

    def _admit(self, entry: _Open) -> Node | None:
        """The open entry as a node to expand; None when it was expanded already or is beyond the horizon."""
        if entry.tie in self.taken:
            return None
        self.taken.add(entry.tie)
        if entry.parent is None:
            return self.inst.root
        state = self.packer.unpack(entry.key)
        plan = (entry.action, entry.parent.plan)
        node = Node(state, None, plan, entry.parent.depth + 1, entry.score, entry.carry, entry.parent)
        if node.depth < self.inst.horizon:
            return node
        self.cut_by_horizon = True
        return None

    def _priority(self, expansion: Expansion, index: int, summed: float) -> tuple[float, float]:
        """(priority, tie-break) of a child."""
        distance = float(expansion.distances[index])
        if self.guided:
            value = self._guided_value(expansion, index, distance)
            return (value + self.config.path_weight * (expansion.node.depth + 1), distance)
        return (summed if self.config.priority == "cumulative" else distance, 0.0)

    def _guided_value(self, expansion: Expansion, index: int, distance: float) -> float:
        """Cost-to-go + value_weight x distance: the priority without its path term."""
        assert expansion.values is not None
        return float(expansion.values[index]) + self.config.value_weight * distance

    def _exploration_key(self, expansion: Expansion, index: int, entry: _Open) -> tuple:
        """type: (rounded cost-to-go, depth); novelty: (width, priority, tie-break, tie); preferred: (priority,
        tie-break, tie); greedy: (priority without the path term, tie-break, tie)."""
        assert expansion.values is not None
        if self.config.exploration == "preferred":
            return entry[:3]
        if self.config.exploration == "greedy":
            return (self._guided_value(expansion, index, entry.tiebreak), entry.tiebreak, entry.tie)
        cost_to_go = round(float(expansion.values[index]))
        if self.config.exploration == "type":
            return (cost_to_go, expansion.node.depth + 1)
        return (self._width(entry.key, cost_to_go), *entry[:3])

    def _width(self, key: int, cost_to_go: int) -> int:
        """1 if the state holds an atom new among the states generated with its rounded cost-to-go, else 2."""
        seen = self.atoms_seen.get(cost_to_go)
        if seen is None:
            seen = self.atoms_seen[cost_to_go] = np.zeros(len(self.packer), bool)
        atoms = self.packer.numbers(key)
        novel = not seen[atoms].all()
        seen[atoms] = True
        return 1 if novel else 2

    def update(self, expansions: Sequence[Expansion]) -> Stop | None:
        self.expanded += len(expansions)
        for expansion in expansions:
            expansion.node.embedding = None  # closed: only its children's parent now, and they embed from its state
            preferred = None  # every child joins the exploration queue, but with "preferred" the nearest only
            if self.config.exploration == "preferred" and len(expansion.distances):
                preferred = expansion.distances.min()
            for index, state in enumerate(expansion.states):
                key = self.packer.pack(state)
                if key in self.closed:
                    continue
                self.closed.add(key)
                summed = float(np.float32(expansion.node.score) + expansion.distances[index])
                if self.inst.problem.task.goal_reached(state):
                    return Outcome.GOAL, expansion.child(index, summed)
                priority = self._priority(expansion, index, summed)
                entry = _Open(
                    *priority, next(self.tie), key, expansion.actions[index], summed, expansion.node, expansion.carry
                )
                heapq.heappush(self.open, entry)
                if self.exploration is not None and (preferred is None or expansion.distances[index] == preferred):
                    self.exploration.add(self._exploration_key(expansion, index, entry), entry)
        if not self.open:
            return (Outcome.HORIZON if self.cut_by_horizon else Outcome.DEAD_END), None
        if self.expanded >= self.config.budget:
            return Outcome.BUDGET, None
        return None


def make_strategy(config: DecodeConfig, inst: Instance, guided: bool) -> Strategy:
    """The strategy object for one instance; `guided`: a cost-to-go model is available."""
    if config.strategy == "beam":
        return BeamSearch(inst, config.beam_width)
    if config.strategy == "beam_backtrack":
        return BacktrackingBeam(inst, config.beam_width, config.budget)
    if config.strategy == "restarts":
        return Restarts(inst, config.beam_width, config.budget)
    return BestFirst(inst, config, guided)
