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
goal atom is reached.

`relaxed_plan` runs the same exploration in layers and extracts a relaxed plan backwards from the goal
(Hoffmann and Nebel 2001): each goal atom, and each precondition of an operator chosen, is supported once,
by the first operator (in operator order) that fires in the layer just below the atom's own. Its length is the
FF heuristic, a domain-independent estimate of the steps to go; its operators applicable in the state are
the helpful ones, whose successors a search tries first.
"""

from __future__ import annotations

import functools
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
        self._pre_start, self._pre = _flattened(pres, self._index)
        self._adds_start, self._adds = _flattened(adds, self._index)
        self._needed = np.diff(self._pre_start)  # per operator: its positive preconditions
        self._free = np.flatnonzero(self._needed == 0)  # operators without positive preconditions
        self._users_start, self._users = _grouped(self._pre_start, self._pre, len(atoms))  # per atom: who needs it
        self._goal = np.asarray([self._index[atom] for atom in sorted(task.fluent_goal)], np.int64)
        self._atoms = len(atoms)
        self._names = [op.name for op in task.operators]

    @functools.cached_property
    def _achievers(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the operators adding each atom, in operator order (built once, where relaxed plans are asked
        for)."""
        return _grouped(self._adds_start, self._adds, self._atoms)

    def _first_achievers(self, atoms: np.ndarray, fired_at: np.ndarray, layer: int) -> np.ndarray:
        """For each of `atoms` (of layer `layer` + 1), the first operator in operator order that adds it and
        fires in `layer`; every atom has one, as that is how it was reached. One NumPy pass over their
        achievers: an atom such as Blocksworld's (clear a) has an achiever for every other block."""
        starts, achievers = self._achievers
        candidates = achievers[_ranges(starts, atoms)]
        lengths = starts[atoms + 1] - starts[atoms]
        hits = np.flatnonzero(fired_at[candidates] == layer)
        return candidates[hits[np.searchsorted(hits, np.cumsum(lengths) - lengths)]]

    def _layers(self, start: np.ndarray, reached: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The exploration from the atoms `start`, one layer at a time: the operators that first fire in it and
        the atoms they first reach (marked in `reached`); it ends with a layer that reaches nothing new."""
        missing = self._needed.copy()  # per operator: its preconditions not reached yet
        slot = np.empty(max(len(self._needed), self._atoms), np.int64)  # `_distinct`'s scratch
        new, ready = start, self._free
        while True:
            users = self._users[_ranges(self._users_start, new)]
            np.subtract.at(missing, users, 1)
            # an operator's last preconditions are all reached in one layer: it is listed once per such atom
            ready = _distinct(np.concatenate([ready, users[missing[users] == 0]]), slot)
            added = self._adds[_ranges(self._adds_start, ready)]
            new = _distinct(added[~reached[added]], slot)
            reached[new] = True
            yield ready, new
            if not len(new):
                return
            ready = np.zeros(0, np.int64)

    def _start(self, state: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """The state's atom numbers (a state holds each atom once), and the atoms reached so far: those."""
        start = np.fromiter((self._index[atom] for atom in state if atom in self._index), np.int64)
        reached = np.zeros(self._atoms, bool)
        reached[start] = True
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
        level = np.full(self._atoms, -1, np.int64)  # the layer each atom is first reached in
        fired_at = np.full(len(self._needed), -1, np.int64)  # the layer each operator first fires in
        level[start] = 0
        if not reached[self._goal].all():
            for layer, (ready, new) in enumerate(self._layers(start, reached)):
                fired_at[ready] = layer
                if not len(new):
                    return math.inf, frozenset()
                level[new] = layer + 1
                if reached[self._goal].all():
                    break
        return self._extract(level, fired_at)

    def _extract(self, level: np.ndarray, fired_at: np.ndarray) -> tuple[float, frozenset[str]]:
        """The backward extraction from the layered exploration: (plan length, its operators firing at layer 0).
        Each atom needed is supported once, by an operator firing in the layer below its own; so the plan holds a
        chain as long as the deepest goal's layer. A layer's atoms are supported together, in NumPy: they are
        all known once the layers above it are done, as an operator's preconditions lie in lower layers."""
        needed: dict[int, list[np.ndarray]] = {}  # layer -> arrays of atoms of it still to support

        def need(atoms: np.ndarray) -> None:
            atoms = atoms[np.argsort(level[atoms], kind="stable")]
            for part in np.split(atoms, np.flatnonzero(np.diff(level[atoms])) + 1):
                if len(part) and level[part[0]] > 0:
                    needed.setdefault(int(level[part[0]]), []).append(part)

        need(self._goal)
        length, operators = 0, np.zeros(0, np.int64)
        slot = np.empty(max(len(fired_at), self._atoms), np.int64)  # `_distinct`'s scratch
        for layer in range(max(needed, default=0), 0, -1):
            if layer not in needed:
                continue
            atoms = _distinct(np.concatenate(needed.pop(layer)), slot)
            operators = _distinct(self._first_achievers(atoms, fired_at, layer - 1), slot)
            length += len(operators)
            need(self._pre[_ranges(self._pre_start, operators)])
        helpful = frozenset(self._names[operator] for operator in operators.tolist() if fired_at[operator] == 0)
        return float(length), helpful
