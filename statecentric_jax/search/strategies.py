"""Search strategies: which nodes to expand next, and when an instance is done.

Every strategy is a small object per instance with `select()` (the nodes to expand this
round, each with the states its expansion must skip: `Selected`) and `update(expansions)` (take the
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
  With a cost-to-go and `exploration`, every other expansion comes from a second queue
  (`search/open_lists.py`); with the relaxed-plan one and `estimate_helpful_only`, only the children of
  helpful actions are estimated (`Selected.estimated`), and only they join the main queue; with
  `preferred_boost`, a third queue holds them alone and takes that many turns after each relaxed plan shorter
  than any before. With `prune_dead_ends`,
  a node taken from the open list is first tested in the delete relaxation (`planning/relaxed.py`) and
  closed unexpanded when the goal is out of reach.
- `lazy_best_first`: `best_first` with deferred evaluation (Fast Downward's lazy search): a child joins
  the open list with the cost-to-go of the node that generated it and is estimated only when it is
  expanded, so an expansion costs one evaluation instead of one per successor. Needs a cost-to-go.
- `restarts`: the paper's beam; when it fails, start again with twice the width, until the
  node budget is spent.

`STRATEGIES` names them (`decode.strategy`); each is made by its `from_config(instance, settings, guided)`,
so a new strategy is one class and one line there.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import math
import operator
from collections.abc import Container, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from statecentric_jax.errors import InputError
from statecentric_jax.planning.packing import PackedStates, StatePacker
from statecentric_jax.planning.relaxed import RelaxedReachability
from statecentric_jax.search.expander import Expansion, Node
from statecentric_jax.search.open_lists import EXPLORATIONS, OpenNode, RelaxedPlan
from statecentric_jax.search.outcome import Outcome

if TYPE_CHECKING:
    from statecentric_jax.search.base import DecodeConfig, Instance

Stop = tuple[Outcome, Node | None]


class Selected(NamedTuple):
    """A node to expand, the states its expansion skips, and the actions whose children the cost-to-go
    estimates (None: all; best-first with `estimate_helpful_only`: the helpful ones)."""

    node: Node
    skip: Container
    estimated: Container[str] | None = None


class Strategy(Protocol):
    def select(self) -> list[Selected]: ...

    def update(self, expansions: Sequence[Expansion]) -> Stop | None: ...


class StrategyClass(Protocol):
    """What `STRATEGIES` holds: a strategy class, made per instance from the decoding settings."""

    def from_config(self, inst: Instance, config: DecodeConfig, guided: bool) -> Strategy: ...


def _ranked(expansions: Sequence[Expansion]) -> list[tuple[float, Expansion, int]]:
    """All children by summed distance (parent's score + step distance, float32); ties keep
    the order of beam slot, then operator. Non-finite sums are dropped. (Python's stable sort
    on the exact float32 values: for a dozen children it is cheaper than NumPy's.)"""
    ranked = []
    for expansion in expansions:
        assert expansion.distances is not None  # beams always predict
        totals = (np.float32(expansion.node.score) + expansion.distances).tolist()
        ranked += [(total, expansion, c) for c, total in enumerate(totals) if math.isfinite(total)]
    ranked.sort(key=operator.itemgetter(0))
    return ranked


class BeamSearch:
    def __init__(self, inst: Instance, width: int):
        self.inst, self.width, self.steps = inst, width, 0
        inst.root.visited = {inst.root.state}
        self.beam = [inst.root]

    @classmethod
    def from_config(cls, inst: Instance, config: DecodeConfig, guided: bool) -> BeamSearch:
        return cls(inst, config.beam_width)

    def select(self) -> list[Selected]:
        return [Selected(node, node.visited) for node in self.beam]  # type: ignore[arg-type]  # beam nodes have sets

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

    @classmethod
    def from_config(cls, inst: Instance, config: DecodeConfig, guided: bool) -> BacktrackingBeam:
        return cls(inst, config.beam_width, config.budget)

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

    @classmethod
    def from_config(cls, inst: Instance, config: DecodeConfig, guided: bool) -> Restarts:
        return cls(inst, config.beam_width, config.budget)

    def select(self) -> list[Selected]:
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


class BestFirst:
    """Open nodes and the closed list hold packed states (`planning/packing.py`) and no embeddings, and an
    expanded node keeps none (docs/log.md, "Memory of best-first search"); a node becomes a `Node`
    again when it is expanded.
    With an exploration queue, every open node is in both queues (with `estimate_helpful_only`, a child left
    without an estimate only in the relaxed-plan one); a node expanded from one is skipped when the other
    reaches it.
    Where the model's distance only breaks ties (`distances_only_break_ties`), expansions come without it
    and it is computed only among open nodes of equal priority, when one of them is next (`inst.tie_distances`):
    the same order, mostly without the model."""

    def __init__(self, inst: Instance, config: DecodeConfig, guided: bool):
        self.inst, self.config, self.guided = inst, config, guided
        self.packer = StatePacker(inst.problem.task)
        self.closed = PackedStates(self.packer)
        root = self.packer.pack(inst.root.state)
        self.closed.add(root)
        self.tie = itertools.count()
        self.open = [OpenNode(0.0, 0.0, next(self.tie), root, None, inst.root.score, None, inst.root.carry)]
        self.expanded, self.cut_by_horizon = 0, False
        exploration = EXPLORATIONS[config.exploration] if guided else None
        self.exploration = exploration(config, self.packer, inst.problem) if exploration is not None else None
        self.taken: set[int] = set()  # open nodes expanded already (from either queue)
        self.turns = [0, 0, 0]  # turns of the main, exploration and preferred queues; a boost lowers the last
        self.tie_distances = inst.tie_distances  # None: every expansion comes with its distances
        self.tied: list = []  # with tie_distances: heap of (distance, tie, open node), all of priority tied_priority
        self.tied_priority = math.inf
        self.known: dict[int, float] = {}  # with tie_distances: the distances of open nodes computed so far, by tie
        self.relaxed = RelaxedReachability(inst.problem.task) if config.prune_dead_ends else None

    @classmethod
    def from_config(cls, inst: Instance, config: DecodeConfig, guided: bool) -> BestFirst:
        return cls(inst, config, guided)

    def select(self) -> list[Selected]:
        turn = self._turn()
        if turn:  # an exploration queue's turn; when it has no node left, the main queue's
            assert self.exploration is not None
            pop = self.exploration.pop if turn == 1 else self._relaxed_plan().pop_preferred
            while (picked := pop()) is not None:
                if (node := self._admit(picked)) is not None:
                    return [Selected(node, self.closed, self._estimated(node))]
        while (entry := self._pop()) is not None:
            if (node := self._admit(entry)) is not None:
                return [Selected(node, self.closed, self._estimated(node))]
        return []

    def _turn(self) -> int:
        """The queue of the next expansion (0: main, 1: exploration, 2: preferred): the one given the fewest so
        far, the first of equals, as Fast Downward alternates its open lists."""
        if self.exploration is None:
            return 0
        turn = min(range(3 if self.config.preferred_boost else 2), key=self.turns.__getitem__)
        self.turns[turn] += 1
        return turn

    def _relaxed_plan(self) -> RelaxedPlan:
        assert isinstance(self.exploration, RelaxedPlan)  # DecodeConfig requires that queue
        return self.exploration

    def _estimated(self, node: Node) -> Container[str] | None:
        """With `estimate_helpful_only`, the node's helpful actions (the relaxed-plan queue's), else None."""
        if not self.config.estimate_helpful_only:
            return None
        return self._relaxed_plan().helpful(node)

    def _pop(self) -> OpenNode | None:
        """The open node of lowest (priority, distance, tie); None when there is none."""
        if self.tie_distances is None:
            return heapq.heappop(self.open) if self.open else None
        if self.open and self.tied and self.open[0].priority < self.tied_priority:
            for _, _, entry in self.tied:  # a lower priority came up: the tied ones wait in the open list again
                heapq.heappush(self.open, entry)
            self.tied = []
        if self.open and (not self.tied or self.open[0].priority == self.tied_priority):
            self.tied_priority = self.open[0].priority
            batch = []
            while self.open and self.open[0].priority == self.tied_priority:
                batch.append(heapq.heappop(self.open))
            if len(batch) == 1 and not self.tied:
                self.known.pop(batch[0].tie, None)
                return batch[0]
            unknown = [entry for entry in batch if entry.tie not in self.known]
            if unknown:
                children = [(entry.parent, self.packer.unpack(entry.key)) for entry in unknown]
                distances = self.tie_distances(children)  # type: ignore[arg-type]  # only the root has no parent
                self.known.update(zip((entry.tie for entry in unknown), distances.tolist()))
            for entry in batch:
                heapq.heappush(self.tied, (self.known[entry.tie], entry.tie, entry))
        if not self.tied:
            return None
        entry = heapq.heappop(self.tied)[2]
        del self.known[entry.tie]
        return entry

    def _admit(self, entry: OpenNode) -> Node | None:
        """The open entry as a node to expand; None when it was expanded already, is beyond the horizon or is a
        dead end (`prune_dead_ends`)."""
        if entry.tie in self.taken:
            return None
        self.taken.add(entry.tie)
        state = self.inst.root.state if entry.parent is None else self.packer.unpack(entry.key)
        if self.relaxed is not None:
            parent = entry.parent.state if entry.parent is not None else None  # expanded: it passed this test
            if not self.relaxed.reaches_goal(state, parent):
                return None
        if entry.parent is None:
            return self.inst.root
        plan = (entry.action, entry.parent.plan)
        node = Node(state, None, plan, entry.parent.depth + 1, entry.score, entry.carry, entry.parent)
        if node.depth < self.inst.horizon:
            return node
        self.cut_by_horizon = True
        return None

    def _priority(self, expansion: Expansion, index: int, summed: float) -> tuple[float, float]:
        """(priority, tie-break) of a child; without distances, the tie-break is computed when it decides."""
        distance = 0.0 if expansion.distances is None else float(expansion.distances[index])
        if self.guided:
            value = self._guided_value(expansion, index, distance)
            return (value + self.config.path_weight * (expansion.node.depth + 1), distance)
        return (summed if self.config.priority == "cumulative" else distance, 0.0)

    def _guided_value(self, expansion: Expansion, index: int, distance: float) -> float:
        """Cost-to-go + value_weight x distance: the priority without its path term."""
        assert expansion.values is not None
        return float(expansion.values[index]) + self.config.value_weight * distance

    def update(self, expansions: Sequence[Expansion]) -> Stop | None:
        self.expanded += len(expansions)
        for expansion in expansions:
            expansion.node.embedding = None  # closed: only its children's parent now, and they embed from its state
            opened = []  # (index, open node) of the children that joined the open list
            task, keys = self.inst.problem.task, expansion.keys
            assert keys is not None  # its nodes are expanded with its closed list, which is packed: keys come
            missing = task.missing_goal(expansion.node.state)
            for index, key in enumerate(keys):
                if key in self.closed:
                    continue
                self.closed.add(key)
                summed = expansion.node.score  # the sum of distances: only reported, and unknown without them
                if expansion.distances is not None:
                    summed = float(np.float32(summed) + expansion.distances[index])
                if expansion.reaches_goal(index, task, missing):
                    return Outcome.GOAL, expansion.child(index, summed)
                value = None if expansion.values is None else expansion.values[index]
                estimated = value is None or not math.isnan(value)
                if value is not None and value <= 0:
                    self.inst.estimates_at_most_zero += 1
                priority = self._priority(expansion, index, summed) if estimated else (math.inf, 0.0)
                entry = OpenNode(
                    *priority, next(self.tie), key, expansion.actions[index], summed, expansion.node, expansion.carry
                )
                if estimated:  # the others only in the exploration queue (`estimate_helpful_only`)
                    heapq.heappush(self.open, entry)
                opened.append((index, entry))
            if self.exploration is not None:
                self.exploration.add(expansion, opened)
                if self.config.preferred_boost and self._relaxed_plan().progressed:
                    self.turns[2] -= self.config.preferred_boost
        if not self.open and not self.tied:
            return (Outcome.HORIZON if self.cut_by_horizon else Outcome.DEAD_END), None
        if self.expanded >= self.config.budget:
            return Outcome.BUDGET, None
        return None


class LazyBestFirst(BestFirst):
    """Best-first search whose children inherit their parent's cost-to-go (deferred evaluation).

    Expanding node n estimates n's own cost-to-go h(n) (`Expander.expand(defer=True)`); each new child c of n
    joins the open list with priority h(n) + value_weight × d(c) + path_weight × depth(c), then d(c), then
    generation order (successors in operator order, as Fast Downward's lazy search without randomised
    successors). d(c), c's distance to n's prediction, needs c embedded and the model asked, so it is
    computed only where it is read (`lazy_model_is_asked`): value_weight > 0, the `preferred` queue (the
    children nearest the prediction: the model's preferred successors), or a model with a carry; otherwise
    it is 0 and a child costs only its successor generation and a closed-list check.
    The goal test stays at generation (symbolic, cheap): a goal child ends the search at once. The closed
    list holds every state generated, as in `best_first`."""

    deferred = True  # `decoding` expands its nodes with `defer`

    @classmethod
    def from_config(cls, inst: Instance, config: DecodeConfig, guided: bool) -> LazyBestFirst:
        if not guided:
            raise InputError(None, "decode.strategy=lazy_best_first defers a cost-to-go's estimates: it needs one")
        return cls(inst, config, guided)


def prunes_dead_ends(strategy: str) -> bool:
    """Whether the strategy can close dead ends unexpanded (`decode.prune_dead_ends`): the best-first ones."""
    return issubclass(STRATEGIES[strategy], BestFirst)  # type: ignore[arg-type]  # a class, not only its protocol


def defers_evaluation(config: DecodeConfig) -> bool:
    """Whether the strategy evaluates a node only when it expands it (`LazyBestFirst`)."""
    return getattr(STRATEGIES[config.strategy], "deferred", False)


def lazy_model_is_asked(config: DecodeConfig, stateless: bool) -> bool:
    """Whether deferred evaluation still asks the model (and embeds every child for its distance): where the
    distance is part of the priority, feeds the `preferred` queue, or the model's carry moves on."""
    return config.value_weight > 0 or config.exploration == "preferred" or not stateless


def distances_only_break_ties(config: DecodeConfig, guided: bool, stateless: bool) -> bool:
    """Whether the model's distances only break ties of equal priority (best-first on a cost-to-go with
    value_weight 0 and no exploration queue that reads them), and the model needs no carry: then `BestFirst`
    asks for them only where they decide."""
    exploration = EXPLORATIONS[config.exploration]
    return (
        config.strategy == "best_first"
        and guided
        and config.value_weight == 0
        and (exploration is None or not exploration.reads_distances)
        and stateless
    )


STRATEGIES: dict[str, StrategyClass] = {
    "beam": BeamSearch,  # the paper's
    "beam_backtrack": BacktrackingBeam,
    "best_first": BestFirst,
    "lazy_best_first": LazyBestFirst,
    "restarts": Restarts,
}


COST_TO_GO_STRATEGIES = ("best_first", "lazy_best_first")  # the strategies a learned cost-to-go guides


def make_strategy(config: DecodeConfig, inst: Instance, guided: bool) -> Strategy:
    """The strategy object for one instance; `guided`: a cost-to-go model is available."""
    return STRATEGIES[config.strategy].from_config(inst, config, guided)
