"""Compact state keys, for search that must remember millions of states.

A state is a frozenset of atom strings: fast to test and apply operators to, but its hash
table costs about 2 KB for a 40-atom Logistics state. `StatePacker` numbers a task's fluent
atoms (the initial state and every operator's add effects, sorted) and keys a state by the
integer whose bit i is set when atom i holds: equal states give equal keys, `unpack(pack(s)) == s`,
and a key costs a few bytes per hundred fluent atoms. A successor's key follows from its
parent's and the operator's effects in two integer operations, so `PackedStates.outside`
tells which operators lead out of the set without building their successor states (best-first
search finds most successors closed already).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from statecentric_jax.planning.tasks import Task

State = frozenset


class StatePacker:
    def __init__(self, task: Task):
        atoms = sorted(task.init.union(*(op.add for op in task.operators)))
        self._bit = {atom: 1 << i for i, atom in enumerate(atoms)}
        self._atoms = np.asarray(atoms, dtype=object)
        self._bytes = (len(atoms) + 7) // 8
        bits = self._bit.get  # an atom no state holds has no bit to clear
        # Per operator (task order): (the bits it keeps, the bits it sets).
        self.effects = [
            (~sum(bits(atom, 0) for atom in op.delete), sum(map(self._bit.__getitem__, op.add)))
            for op in task.operators
        ]

    def __len__(self) -> int:
        """The number of fluent atoms (atom numbers run from 0 to len - 1)."""
        return len(self._atoms)

    def pack(self, state: State) -> int:
        """The state's key (a KeyError: an atom that neither the initial state nor any operator holds)."""
        return sum(map(self._bit.__getitem__, state))

    def numbers(self, key: int) -> np.ndarray:
        """The numbers of the atoms that hold in the keyed state, ascending."""
        bits = np.unpackbits(np.frombuffer(key.to_bytes(self._bytes, "little"), np.uint8), bitorder="little")
        return np.flatnonzero(bits)

    def unpack(self, key: int) -> State:
        return frozenset(self._atoms[self.numbers(key)].tolist())


class PackedStates:
    """A set of states stored as keys; `in` takes states or keys."""

    def __init__(self, packer: StatePacker):
        self.packer = packer
        self._keys: set[int] = set()

    def add(self, key: int) -> None:
        self._keys.add(key)

    def __contains__(self, item: object) -> bool:
        key = item if isinstance(item, int) else self.packer.pack(item)  # type: ignore[arg-type]
        return key in self._keys

    def outside(self, state: State, operators: Iterable[int]) -> list[int]:
        """Those of the operators applicable in `state` (indices into the task's) whose successor is not in the set."""
        key, keys, effects = self.packer.pack(state), self._keys, self.packer.effects
        return [i for i in operators if (key & effects[i][0]) | effects[i][1] not in keys]
