"""Successor generation: every applicable (operator, next state) of a state.

This is the hot path of decoding. Looping over every ground operator in Python
costs O(#operators) subset tests per state; instead each operator is filed under
one "key" precondition atom (the one shared by the fewest operators), so a state
only looks at the operators whose key atom it contains. Results come in the
task's operator order, the same as the naive loop. Negative preconditions are tested
after the key and the positive ones, and only for the operators that have any. With `prune_symmetric`,
only one operator per orbit of twin objects is applicable (`planning/symmetry.py`).
"""

from __future__ import annotations

import collections
import random
from collections.abc import Container, Iterator

from statecentric_jax.planning.packing import Key, PackedStates
from statecentric_jax.planning.symmetry import Orbits, Twins
from statecentric_jax.planning.tasks import Operator, Task


class SuccessorGenerator:
    """Precondition-indexed applicability test for one task."""

    def __init__(self, task: Task, prune_symmetric: bool = False):
        self.operators = task.operators
        self._twins = Twins(task) if prune_symmetric else None
        self._orbits: tuple[frozenset[str], Orbits] | None = None  # of the state last asked
        uses = collections.Counter(atom for op in self.operators for atom in op.pre)
        buckets: dict[str, list[tuple[int, frozenset[str]]]] = collections.defaultdict(list)
        self._unconditional: list[int] = []
        self._negative = {index: op.pre_neg for index, op in enumerate(self.operators) if op.pre_neg}
        for index, op in enumerate(self.operators):
            if not op.pre:
                self._unconditional.append(index)
                continue
            key = min(op.pre, key=lambda atom: (uses[atom], atom))
            buckets[key].append((index, op.pre - {key}))
        self._buckets = dict(buckets)
        self._keys = frozenset(self._buckets)

    def applicable(self, state: frozenset[str]) -> list[int]:
        """Indices (into task.operators, ascending) of the operators applicable in `state` (with
        `prune_symmetric`: the first of each orbit)."""
        if self._twins is not None:
            return self._orbits_of(state).kept
        return self._applicable(state)

    def representatives(self, state: frozenset[str], names: frozenset[str]) -> frozenset[str]:
        """The applicable operators that stand for `names` (operators applicable in `state`): the names
        themselves, or with `prune_symmetric` the ones kept of their orbits."""
        if self._twins is None:
            return names
        return self._orbits_of(state).representatives(names)

    def _orbits_of(self, state: frozenset[str]) -> Orbits:
        assert self._twins is not None
        if self._orbits is None or self._orbits[0] != state:
            self._orbits = state, Orbits(self.operators, self._applicable(state), self._twins.classes(state))
        return self._orbits[1]

    def _applicable(self, state: frozenset[str]) -> list[int]:
        found = list(self._unconditional)
        for key in self._keys & state:
            found.extend(index for index, rest in self._buckets[key] if rest <= state)
        if self._negative:
            negative = self._negative
            found = [index for index in found if index not in negative or negative[index].isdisjoint(state)]
        found.sort()
        return found

    def successors(
        self, state: frozenset[str], skip: Container[frozenset[str]] = ()
    ) -> list[tuple[Operator, frozenset[str]]]:
        """(operator, next state) for every applicable operator whose next state is not in `skip`.

        A `PackedStates` (of this task) rejects a next state by its key, before the state is built; its packer
        remembers the keys of the states built."""
        return list(self.each_successor(state, skip))

    def each_successor(
        self, state: frozenset[str], skip: Container[frozenset[str]] = ()
    ) -> Iterator[tuple[Operator, frozenset[str]]]:
        """`successors`, built one at a time as they are taken: a state can have hundreds of thousands, and the
        search checks its time and memory limits while it takes them."""
        if isinstance(skip, PackedStates):
            remember = skip.packer.remember
            return ((op, remember(op.apply(state), key)) for op, key in self.each_successor_key(state, skip))
        ops = self.operators
        return ((ops[i], nxt) for i in self.applicable(state) if (nxt := ops[i].apply(state)) not in skip)

    def each_successor_key(self, state: frozenset[str], skip: PackedStates) -> Iterator[tuple[Operator, Key]]:
        """(operator, successor's key) for every applicable operator whose successor is not in `skip`, one at a
        time, without building the successor states: a search may read few of the thousands of successors of a
        state (`Expander.expand`). The packer forgets the keys it remembered (an expansion begins)."""
        ops = self.operators
        skip.packer.forget()
        return ((ops[i], key) for i, key in skip.outside(state, self.applicable(state)))


def naive_successors(task: Task, state: frozenset[str]) -> list[tuple[Operator, frozenset[str]]]:
    """The reference loop over every ground operator (for tests and benchmarks)."""
    return [(op, op.apply(state)) for op in task.operators if op.applicable(state)]


def random_walk(task: Task, steps: int, seed: int) -> list[frozenset[str]]:
    """States s_0..s_n of a seeded random walk (stops early in a dead end); for tests and benchmarks."""
    rng, generator = random.Random(seed), SuccessorGenerator(task)
    states = [task.init]
    for _ in range(steps):
        successors = generator.successors(states[-1])
        if not successors:
            break
        states.append(rng.choice(successors)[1])
    return states
