"""Compact state keys, for search that must remember millions of states.

A state is a frozenset of atom strings: fast to test and apply operators to, but its hash
table costs about 2 KB for a 40-atom Logistics state. `StatePacker` numbers a task's fluent
atoms (the initial state and every operator's add effects, sorted) and keys a state by the
integer whose bit i is set when atom i holds: equal states give equal keys, `unpack(pack(s)) == s`,
and a key costs a few bytes per hundred fluent atoms. A successor's key follows from its
parent's and the operator's effects in two integer operations, so `PackedStates.outside`
tells which operators lead out of the set without building their successor states (best-first
search finds most successors closed already). The keys of the states built last (successors
outside the set, unpacked states) are remembered, so packing them again is a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from statecentric_jax.planning.tasks import Task

State = frozenset


PRECOMPUTED_ATOMS = 4096  # up to this many fluent atoms, each atom's bit and each operator's masks are kept;
# beyond, each costs a bit per fluent atom (gigabytes over hundreds of thousands of operators): computed per use
KNOWN_KEYS = 1 << 10  # keys of states built last, remembered for `pack` (forgotten all at once beyond this)


class StatePacker:
    def __init__(self, task: Task):
        atoms = sorted(task.init.union(*(op.add for op in task.operators)))
        self._number = {atom: i for i, atom in enumerate(atoms)}
        self._atoms = np.asarray(atoms, dtype=object)
        self._bytes = (len(atoms) + 7) // 8
        number = self._number.get  # an atom no state holds has no bit to clear
        # Per operator (task order): the numbers of the atoms it clears, then of those it sets.
        self.effects = [
            (tuple(i for i in map(number, op.delete) if i is not None), tuple(map(self._number.__getitem__, op.add)))
            for op in task.operators
        ]
        self._bit: dict[str, int] | None = None
        self._known: dict[State, int] = {}  # `remember`ed keys
        self._masks: list[tuple[int, int]] = []  # per operator: (the bits it keeps, the bits it sets)
        if len(atoms) <= PRECOMPUTED_ATOMS:
            self._bit = {atom: 1 << i for i, atom in enumerate(atoms)}
            self._masks = [(~sum(1 << i for i in clear), sum(1 << i for i in add)) for clear, add in self.effects]

    def __len__(self) -> int:
        """The number of fluent atoms (atom numbers run from 0 to len - 1)."""
        return len(self._atoms)

    def pack(self, state: State) -> int:
        """The state's key (a KeyError: an atom that neither the initial state nor any operator holds)."""
        key = self._known.get(state)
        if key is not None:
            return key
        if self._bit is not None:
            return sum(map(self._bit.__getitem__, state))
        bits = np.zeros(self._bytes * 8, np.uint8)
        bits[list(map(self._number.__getitem__, state))] = 1
        return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")

    def successor(self, key: int, operator: int) -> int:
        """The key of the state that the operator (an index into the task's) leads to from the keyed state."""
        if self._masks:
            keep, add = self._masks[operator]
            return (key & keep) | add
        clear, set_ = self.effects[operator]
        for i in clear:
            key &= ~(1 << i)
        for i in set_:
            key |= 1 << i
        return key

    def numbers(self, key: int) -> np.ndarray:
        """The numbers of the atoms that hold in the keyed state, ascending."""
        bits = np.unpackbits(np.frombuffer(key.to_bytes(self._bytes, "little"), np.uint8), bitorder="little")
        return np.flatnonzero(bits)

    def unpack(self, key: int) -> State:
        return self.remember(frozenset(self._atoms[self.numbers(key)].tolist()), key)

    def remember(self, state: State, key: int) -> State:
        """The state, its key kept for `pack` (the caller vouches that it is the state's key)."""
        if len(self._known) >= KNOWN_KEYS:
            self._known.clear()
        self._known[state] = key
        return state


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

    def outside(self, state: State, operators: Iterable[int]) -> list[tuple[int, int]]:
        """(operator, successor's key) for those of the operators applicable in `state` (indices into the task's)
        whose successor is not in the set."""
        key, keys, successor = self.packer.pack(state), self._keys, self.packer.successor
        return [(i, child) for i in operators if (child := successor(key, i)) not in keys]
