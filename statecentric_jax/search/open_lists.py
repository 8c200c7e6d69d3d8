"""Open lists of best-first search: its open node, and the exploration queues it can alternate with.

With a cost-to-go and `decode.exploration`, best-first search takes every other expansion from a second
queue, as planners alternate queues against plateaus and local minima of their heuristic. Each queue is
one class here, made from the decoding settings, the instance's state packer and its problem, with `add(expansion,
children)` (the children of one expansion that joined the open list, in operator order) and `pop()` (an
open node, or None when it is empty); `EXPLORATIONS` names them, so a new queue is one class and one line.

- `type`: a random open node of a random type (rounded cost-to-go, depth), seeded per problem (type-based
  exploration, Xie et al. 2014), which reads no signal but the learned one;
- `novelty`: the open node of lowest (width, priority), width 1 when the state holds an atom that no state
  generated before with the same rounded cost-to-go held (best-first width search, Lipovetzky and Geffner
  2017), a symbolic, domain-independent signal;
- `preferred`: the open node of lowest priority among those the transition model preferred, each the child
  nearest its parent's prediction (a learned policy's preferred successors, as planners keep a queue of
  preferred operators' successors: Richter and Helmert 2009);
- `greedy`: the open node of lowest priority without the `path_weight` term, so greedy best-first search
  alternates with the weighted one, as planners alternate queues over one heuristic (Röger and Helmert 2010);
- `relaxed_plan`: the open node of lowest FF heuristic (`planning/relaxed.py`), each child with its parent's
  (deferred evaluation: one relaxed plan per expansion), the successors of the parent's helpful actions
  first: a domain-independent heuristic beside the learned one, as LAMA alternates queues of its FF and
  landmark heuristics (Richter and Westphal 2010). Where the learned estimate misleads, as on a plateau or
  where it credits preparatory steps that no goal needs, the symbolic one still moves towards the goal.
  With `decode.estimate_helpful_only`, the relaxed plan is made before the expansion and only the children
  of helpful actions are estimated and join the main queue; every child still joins this one. A learned
  estimate costs far more than a successor where a state has thousands of them (turning each satellite to
  every direction), and the main queue then takes only preferred successors, as Fast Downward's
  preferred-only queues do.
  With `decode.preferred_boost`, it also keeps a third queue of the helpful actions' children alone, and a
  relaxed plan shorter than any before boosts it: it is taken the next `preferred_boost` turns (Fast
  Downward's boosted preferred operators, Richter and Helmert 2009), so that a search making progress
  follows the relaxed plan rather than widening the plateau it came from.

`reads_distances`: whether the queue reads the transition model's distances (then every expansion is
predicted; otherwise they are computed only where they break ties of the main queue).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from statecentric_jax.planning.packing import Key, StatePacker
from statecentric_jax.planning.relaxed import RelaxedReachability
from statecentric_jax.search.expander import Expansion, Node, Problem

if TYPE_CHECKING:
    from statecentric_jax.search.base import DecodeConfig


class OpenNode(NamedTuple):
    """An open node of best-first search and its place in the queue, in one tuple (most are never expanded):
    ordered by priority, then tie-break, then tie (unique), so the fields after it are never compared."""

    priority: float
    tiebreak: float  # the transition model's distance when guided by a cost-to-go; 0 otherwise
    tie: int  # generation order
    key: Key  # the state, packed
    action: str | None  # None: the root
    score: float
    parent: Node | None
    carry: Any


Children = Sequence[tuple[int, OpenNode]]  # (index in the expansion, open node)


class Exploration(Protocol):
    reads_distances: bool

    def __init__(self, config: DecodeConfig, packer: StatePacker, problem: Problem) -> None: ...

    def add(self, expansion: Expansion, children: Children) -> None: ...

    def pop(self) -> OpenNode | None: ...


class RandomOfRandomType:
    """Items by type, for drawing a random type and then a random item of it in O(1)."""

    def __init__(self, seed: int = 0):
        self.random = random.Random(seed)
        self.keys: list[tuple] = []  # the types with items
        self.items: dict[tuple, list] = {}

    def add(self, key: tuple, item: Any) -> None:
        if key not in self.items:
            self.items[key] = []
            self.keys.append(key)
        self.items[key].append(item)

    def pop(self) -> Any | None:
        """A random item of a random type (removed), or None when there is none."""
        if not self.keys:
            return None
        k = self.random.randrange(len(self.keys))
        key = self.keys[k]
        items = self.items[key]
        i = self.random.randrange(len(items))
        items[i], items[-1] = items[-1], items[i]
        item = items.pop()
        if not items:
            del self.items[key]
            self.keys[k] = self.keys[-1]
            self.keys.pop()
        return item


def _cost_to_go(expansion: Expansion, index: int) -> float:
    assert expansion.values is not None  # exploration queues exist only with a cost-to-go
    return float(expansion.values[index])


class TypeBased:
    reads_distances = True

    def __init__(self, config: DecodeConfig, packer: StatePacker, problem: Problem):
        self.types = RandomOfRandomType()

    def add(self, expansion: Expansion, children: Children) -> None:
        for index, node in children:
            self.types.add((round(_cost_to_go(expansion, index)), expansion.node.depth + 1), node)

    def pop(self) -> OpenNode | None:
        return self.types.pop()


class _Lowest:
    """Open nodes by a key of their own (unique: it ends with the tie), lowest first."""

    reads_distances = True  # the main queue's tie-break, in the open node

    def __init__(self, config: DecodeConfig, packer: StatePacker, problem: Problem):
        self.config, self.packer = config, packer
        self.heap: list = []

    def key(self, expansion: Expansion, index: int, node: OpenNode) -> tuple:
        raise NotImplementedError

    def add(self, expansion: Expansion, children: Children) -> None:
        for index, node in children:
            heapq.heappush(self.heap, (self.key(expansion, index, node), node))

    def pop(self) -> OpenNode | None:
        return heapq.heappop(self.heap)[1] if self.heap else None


class Novelty(_Lowest):
    def __init__(self, config: DecodeConfig, packer: StatePacker, problem: Problem):
        super().__init__(config, packer, problem)
        self.atoms_seen: dict[int, np.ndarray] = {}  # rounded cost-to-go -> atoms of the states generated with it

    def key(self, expansion: Expansion, index: int, node: OpenNode) -> tuple:
        return (self._width(node.key, round(_cost_to_go(expansion, index))), *node[:3])

    def _width(self, key: Key, cost_to_go: int) -> int:
        """1 if the state holds an atom new among the states generated with its rounded cost-to-go, else 2."""
        seen = self.atoms_seen.get(cost_to_go)
        if seen is None:
            seen = self.atoms_seen[cost_to_go] = np.zeros(len(self.packer), bool)
        atoms = self.packer.numbers(key)
        novel = not seen[atoms].all()
        seen[atoms] = True
        return 1 if novel else 2


class Preferred(_Lowest):
    def add(self, expansion: Expansion, children: Children) -> None:
        distances = expansion.distances
        assert distances is not None  # with an exploration queue, every expansion is predicted
        if len(distances):
            nearest = distances.min()
            super().add(expansion, [(i, node) for i, node in children if distances[i] == nearest])

    def key(self, expansion: Expansion, index: int, node: OpenNode) -> tuple:
        return node[:3]


class Greedy(_Lowest):
    def key(self, expansion: Expansion, index: int, node: OpenNode) -> tuple:
        value = _cost_to_go(expansion, index) + self.config.value_weight * node.tiebreak
        return (value, node.tiebreak, node.tie)


class RelaxedPlan(_Lowest):
    reads_distances = False

    def __init__(self, config: DecodeConfig, packer: StatePacker, problem: Problem):
        super().__init__(config, packer, problem)
        self.relaxed = RelaxedReachability(problem.task)
        self.generator = problem.generator
        self.planned: tuple[Node, float, frozenset[str]] | None = None  # the last node `helpful` was asked of
        self.preferred: list | None = [] if config.preferred_boost else None  # helpful actions' children alone
        self.shortest = math.inf  # the shortest relaxed plan so far
        self.progressed = False  # whether the last `add` found a shorter one

    def helpful(self, node: Node) -> frozenset[str]:
        """The helpful actions of a node about to be expanded (kept for its `add`); none at a dead end."""
        self.planned = (node, *self._relaxed_plan(node.state))
        return self.planned[2]

    def _relaxed_plan(self, state: frozenset[str]) -> tuple[float, frozenset[str]]:
        """FF's estimate and helpful actions, each helpful action as the successor generator keeps it (the
        operator kept of its orbit, with `decode.prune_symmetric`)."""
        estimate, helpful = self.relaxed.relaxed_plan(state)
        return estimate, self.generator.representatives(state, frozenset(helpful))

    def add(self, expansion: Expansion, children: Children) -> None:
        if self.planned is not None and self.planned[0] is expansion.node:
            _, estimate, helpful = self.planned
        else:
            estimate, helpful = self._relaxed_plan(expansion.node.state)
        self.planned = None
        self.progressed = estimate < self.shortest
        self.shortest = min(self.shortest, estimate)
        if estimate == math.inf:
            return  # a dead end: so are its children, which the main queue still holds
        for index, node in children:
            unhelpful = expansion.actions[index] not in helpful
            heapq.heappush(self.heap, ((estimate, unhelpful, node.tie), node))
            if self.preferred is not None and not unhelpful:
                heapq.heappush(self.preferred, ((estimate, node.tie), node))

    def pop_preferred(self) -> OpenNode | None:
        """The helpful child of lowest (estimate, tie) (`decode.preferred_boost`), or None when there is none."""
        assert self.preferred is not None
        return heapq.heappop(self.preferred)[1] if self.preferred else None


EXPLORATIONS: dict[str, type[Exploration] | None] = {
    "none": None,
    "type": TypeBased,
    "novelty": Novelty,
    "preferred": Preferred,
    "greedy": Greedy,
    "relaxed_plan": RelaxedPlan,
}
