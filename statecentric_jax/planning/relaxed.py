"""The delete relaxation: whether the goal can still be reached from a state when deletes are ignored, and
how far it is (FF's relaxed plan).

The delete relaxation over-approximates what any plan can make true: an atom that no sequence of
operators reaches while ignoring deletes (and negative preconditions) is never reached. So a state from
which the relaxed exploration misses a goal atom is a dead end, and a search may close it unexpanded
(`decode.prune_dead_ends`). A learned cost-to-go need not see them: in Childsnack, serving the last
gluten-free sandwich to a child who is not allergic, with no gluten-free bread left, serves one more child
and leaves an allergic one who can never be served.

The exploration counts, per operator, its positive preconditions not reached yet: each newly reached atom
lowers the counts of the operators that need it, an operator whose count reaches zero fires once and adds
its effects. Each operator and atom is touched once per call, in NumPy, and the call stops as soon as every
goal atom is reached. Operators' add effects and preconditions are also kept as rows of a table padded to
the longest (a STRIPS schema has a few of each), so that a layer's thousands of operators read theirs in
one gather.

`relaxed_plan` runs the same exploration in layers and extracts a relaxed plan backwards from the goal
(Hoffmann and Nebel 2001): each goal atom, and each precondition of an operator chosen, is supported once,
by the first operator (in operator order) that fires in the layer just below the atom's own. The exploration
notes that operator as it first reaches the atom: looking it up afterwards read all of the atom's achievers,
and Blocksworld's (clear a) has one for every other block. The plan's length is the FF heuristic, a
domain-independent estimate of the steps to go; its operators applicable in the state are the helpful ones,
whose successors a search tries first.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator

import numpy as np

from statecentric_jax.planning.tasks import Task


def _flattened(sets: list[frozenset[str]], index: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the atom numbers (`index`) of `sets` in turn: set i's are `items[starts[i]:starts[i + 1]]`."""
    starts = np.zeros(len(sets) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, sets), np.int64, len(sets)), out=starts[1:])
    items = np.fromiter(map(index.__getitem__, itertools.chain.from_iterable(sets)), np.int64, int(starts[-1]))
    return starts, items


def _padded(starts: np.ndarray, items: np.ndarray, filler: int) -> np.ndarray:
    """The CSR (`starts`, `items`) as a table: row i holds list i's items, then `filler` up to the longest."""
    lengths = np.diff(starts)
    table = np.full((len(lengths), int(lengths.max(initial=1))), filler, np.int64)
    owners = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    table[owners, np.arange(len(items)) - starts[owners]] = items
    return table


def _grouped(starts: np.ndarray, items: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The CSR (`starts`, `items`) of lists turned around, by item: for item i (of `size`),
    `members[by_item[i]:by_item[i + 1]]` are the indices of the lists that hold it, in order."""
    owners = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
    by_item = np.zeros(size + 1, np.int64)
    np.cumsum(np.bincount(items, minlength=size), out=by_item[1:])
    return by_item, owners[np.argsort(items, kind="stable")]


def _ranges(starts: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The concatenated index ranges starts[w]:starts[w + 1] for each w in `which`."""
    lengths = starts[which + 1] - starts[which]
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, np.int64)
    shift = np.repeat(starts[which] - (np.cumsum(lengths) - lengths), lengths)
    return shift + np.arange(total, dtype=np.int64)


def _distinct(items: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """`items` without repeats (one occurrence of each, in no particular order: every caller uses them as a set),
    in time linear in their number: sorting them cost a layer of a large task most. `slot`: scratch of at least
    max(items) + 1 entries."""
    position = np.arange(len(items))
    slot[items] = position
    return items[slot[items] == position]


class RelaxedReachability:
    """The delete relaxation of one task, explored from any of its states."""

    def __init__(self, task: Task):
        pres, adds = [op.pre for op in task.operators], [op.add for op in task.operators]
        atoms = sorted({*itertools.chain.from_iterable(pres), *itertools.chain.from_iterable(adds), *task.fluent_goal})
        self._index = {atom: number for number, atom in enumerate(atoms)}
        pre_start, pre = _flattened(pres, self._index)
        # fillers: an atom that is always reached, and never first reached in a layer, so never supported
        self._pre_table = _padded(pre_start, pre, filler=len(atoms))
        self._add_table = _padded(*_flattened(adds, self._index), filler=len(atoms))
        self._needed = np.diff(pre_start)  # per operator: its positive preconditions
        self._free = np.flatnonzero(self._needed == 0)  # operators without positive preconditions
        self._users_start, self._users = _grouped(pre_start, pre, len(atoms))  # per atom: who needs it
        self._goal = np.asarray([self._index[atom] for atom in sorted(task.fluent_goal)], np.int64)
        self._atoms = len(atoms)
        self._names = [op.name for op in task.operators]

    def _layers(
        self, start: np.ndarray, reached: np.ndarray, achiever: np.ndarray | None = None
    ) -> Iterator[np.ndarray]:
        """The exploration from the atoms `start`, one layer at a time: the atoms first reached in it (marked in
        `reached`), by the operators that first fire in it; it ends with a layer that reaches nothing new.
        `achiever`: filled with each atom's first operator, in operator order, of the layer that reaches it."""
        missing = self._needed.copy()  # per operator: its preconditions not reached yet
        slot = np.empty(max(len(self._needed), self._atoms), np.int64)  # `_distinct`'s scratch
        new, ready = start, self._free
        while True:
            users = self._users[_ranges(self._users_start, new)]
            np.subtract.at(missing, users, 1)
            # an operator's last preconditions are all reached in one layer: it is listed once per such atom
            ready = _distinct(np.concatenate([ready, users[missing[users] == 0]]), slot)
            added = np.take(self._add_table, ready, axis=0).ravel()  # faster than indexing rows
            fresh = np.flatnonzero(~reached[added])
            new = added[fresh]
            if achiever is not None:
                np.minimum.at(achiever, new, ready[fresh // self._add_table.shape[1]])
            new = _distinct(new, slot)
            reached[new] = True
            yield new
            if not len(new):
                return
            ready = np.zeros(0, np.int64)

    def _start(self, state: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """The state's atom numbers (a state holds each atom once), and the atoms reached so far: those."""
        start = np.fromiter((self._index[atom] for atom in state if atom in self._index), np.int64)
        reached = np.zeros(self._atoms + 1, bool)  # and the filler of `_add_table`
        reached[start] = reached[self._atoms] = True
        return start, reached

    def reaches_goal(self, state: Iterable[str], alive: Iterable[str] | None = None) -> bool:
        """Whether every goal atom is reached from `state` in the delete relaxation (False: a dead end).

        `alive`: a state known to reach the goal so, such as the parent of `state` in a search. Once every atom
        of it that `state` lacks is reached, all of `alive`'s relaxed reach is, so the goal is: the answer is the
        same, and the exploration mostly stops after a few layers instead of reaching the goal (at once where
        `state` lost none of them)."""
        start, reached = self._start(state)
        lost = np.fromiter((self._index[atom] for atom in alive or () if atom in self._index), np.int64)
        lost = lost[~reached[lost]]
        if alive is not None and not len(lost):
            return True

        def done() -> bool:
            return bool(reached[self._goal].all() or (len(lost) and reached[lost].all()))

        return done() or any(done() for _ in self._layers(start, reached))

    def relaxed_plan(self, state: Iterable[str]) -> tuple[float, frozenset[str]]:
        """(FF heuristic, helpful actions' names) of `state`: the length of a relaxed plan from it to the goal
        (inf and no actions when the goal is out of reach), and that plan's operators applicable in `state`."""
        start, reached = self._start(state)
        achiever = np.full(self._atoms, len(self._needed), np.int64)  # the first operator to reach each atom
        layers = [start]  # the atoms first reached in each layer
        if not reached[self._goal].all():
            for new in self._layers(start, reached, achiever):
                if not len(new):
                    return math.inf, frozenset()
                layers.append(new)
                if reached[self._goal].all():
                    break
        return self._extract(layers, achiever)

    def _extract(self, layers: list[np.ndarray], achiever: np.ndarray) -> tuple[float, frozenset[str]]:
        """The backward extraction from the layered exploration: (plan length, its operators firing at layer 0).
        Each atom needed is supported once, by an operator firing in the layer below its own; so the plan holds a
        chain as long as the deepest goal's layer. A layer's atoms are supported together, in NumPy: they are
        all known once the layers above it are done, as an operator's preconditions lie in lower layers. An
        operator firing in layer k > 0 has a precondition first reached in layer k, so the last layer supported
        is layer 1, whose operators fire in layer 0: the helpful ones."""
        needed = np.zeros(self._atoms + 1, bool)  # and the filler of `_pre_table`
        needed[self._goal] = True
        length, operators = 0, np.zeros(0, np.int64)
        slot = np.empty(max(len(self._needed), self._atoms), np.int64)  # `_distinct`'s scratch
        for atoms in reversed(layers[1:]):
            operators = _distinct(achiever[atoms[needed[atoms]]], slot)
            length += len(operators)
            needed[np.take(self._pre_table, operators, axis=0)] = True
        return float(length), frozenset(self._names[operator] for operator in operators.tolist())
