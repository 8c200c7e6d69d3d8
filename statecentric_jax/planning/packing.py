"""Compact state keys, for search that must remember millions of states.

A state is a frozenset of atom strings: fast to test and apply operators to, but its hash
table costs about 2 KB for a 40-atom Logistics state. `StatePacker` numbers a task's fluent
atoms (the initial state and every operator's add effects, sorted) and keys a state by the
integer whose bit i is set when atom i holds: equal states give equal keys, `unpack(pack(s)) == s`,
and a key costs a few bytes per hundred fluent atoms. Where a task has so many fluent atoms that a
state holds only a small part of them (Blocksworld with 386 blocks: 150,155 atoms, 436 held), a key
is instead the bytes of the sorted numbers of the atoms held, 2 or 4 bytes each (there 1.7 KB
instead of 18.8 KB). A successor's key follows from its parent's and the operator's effects (two
integer operations, or a splice of the parent's bytes), so `PackedStates.outside`
tells which operators lead out of the set without building their successor states (best-first
search finds most successors closed already). The keys of the states built last (successors
outside the set, unpacked states) are remembered, so packing them again is a dictionary lookup.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from statecentric_jax.planning.tasks import Task

State = frozenset
Key = int | bytes  # the bits of the atoms held, or their sorted numbers' bytes (`StatePacker`)


PRECOMPUTED_ATOMS = 4096  # up to this many fluent atoms, each atom's bit and each operator's masks are kept;
# beyond, each costs a bit per fluent atom (gigabytes over hundreds of thousands of operators): computed per use
NUMBERED_KEYS_BELOW = 0.5  # beyond PRECOMPUTED_ATOMS, keys are numbers where the initial state's take under
# this fraction of the bits' bytes
# keys of the states built since the last expansion began (`forget`), remembered for `pack`; a bound beyond which
# they are forgotten all at once, as the successors of one node can be hundreds of thousands
KNOWN_KEYS = 1 << 16


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
        self._known: dict[State, Key] = {}  # `remember`ed keys
        self._masks: list[tuple[int, int]] = []  # per operator: (the bits it keeps, the bits it sets)
        self._dtype: np.dtype | None = None  # numbered keys: the width of one number
        if len(atoms) <= PRECOMPUTED_ATOMS:
            self._bit = {atom: 1 << i for i, atom in enumerate(atoms)}
            self._masks = [(~sum(1 << i for i in clear), sum(1 << i for i in add)) for clear, add in self.effects]
        else:
            dtype = np.dtype("<u2" if len(atoms) <= 1 << 16 else "<u4")
            if dtype.itemsize * len(task.init) < NUMBERED_KEYS_BELOW * self._bytes:
                self._dtype = dtype

    def __len__(self) -> int:
        """The number of fluent atoms (atom numbers run from 0 to len - 1)."""
        return len(self._atoms)

    def pack(self, state: State) -> Key:
        """The state's key (a KeyError: an atom that neither the initial state nor any operator holds)."""
        key = self._known.get(state)
        if key is not None:
            return key
        if self._bit is not None:
            return sum(map(self._bit.__getitem__, state))
        numbers = sorted(map(self._number.__getitem__, state))
        if self._dtype is not None:
            return np.asarray(numbers, self._dtype).tobytes()
        bits = np.zeros(self._bytes * 8, np.uint8)
        bits[numbers] = 1
        return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")

    def successor(self, key: Key, operator: int) -> Key:
        """The key of the state that the operator (an index into the task's) leads to from the keyed state."""
        return self.successors_of(key)(operator)

    def successors_of(self, key: Key) -> Callable[[int], Key]:
        """operator -> the key of the state it leads to from the keyed state (the parent's work done once)."""
        if self._masks:
            masks = self._masks

            def masked(operator: int) -> Key:
                keep, add = masks[operator]
                return (key & keep) | add  # type: ignore[operator]

            return masked
        if self._dtype is not None:
            return self._spliced(key)  # type: ignore[arg-type]

        def bitwise(operator: int) -> Key:
            child, (clear, set_) = key, self.effects[operator]
            for i in clear:
                child &= ~(1 << i)  # type: ignore[operator]
            for i in set_:
                child |= 1 << i  # type: ignore[operator]
            return child

        return bitwise

    def _spliced(self, key: bytes) -> Callable[[int], Key]:
        """Numbered keys: the child's bytes are the parent's with the cleared numbers cut out and the set ones
        put in at their places (clearing before setting, as with bits)."""
        assert self._dtype is not None
        held, width, effects = np.frombuffer(key, self._dtype).tolist(), self._dtype.itemsize, self.effects

        def spliced(operator: int) -> Key:
            clear, set_ = effects[operator]
            edits = []  # (place in held, 0: insert this number before it / 1: drop the number there, number)
            for i in clear:
                place = bisect.bisect_left(held, i)
                if place < len(held) and held[place] == i and i not in set_:
                    edits.append((place, 1, i))
            for i in set_:
                place = bisect.bisect_left(held, i)
                if place == len(held) or held[place] != i:
                    edits.append((place, 0, i))
            if not edits:
                return key
            edits.sort()
            parts, done = [], 0
            for place, drop, i in edits:
                parts.append(key[done * width : place * width])
                if drop:
                    done = place + 1
                else:
                    parts.append(i.to_bytes(width, "little"))
                    done = place
            parts.append(key[done * width :])
            return b"".join(parts)

        return spliced

    def numbers(self, key: Key) -> np.ndarray:
        """The numbers of the atoms that hold in the keyed state, ascending."""
        if isinstance(key, bytes):
            return np.frombuffer(key, self._dtype)
        bits = np.unpackbits(np.frombuffer(key.to_bytes(self._bytes, "little"), np.uint8), bitorder="little")
        return np.flatnonzero(bits)

    def unpack(self, key: Key) -> State:
        return self.remember(frozenset(self._atoms[self.numbers(key)].tolist()), key)

    def forget(self) -> None:
        """Drop the remembered keys (an expansion begins: the states built before it are no longer asked for)."""
        self._known.clear()

    def remember(self, state: State, key: Key) -> State:
        """The state, its key kept for `pack` (the caller vouches that it is the state's key)."""
        if len(self._known) >= KNOWN_KEYS:
            self._known.clear()
        self._known[state] = key
        return state


class PackedStates:
    """A set of states stored as keys; `in` takes states or keys."""

    def __init__(self, packer: StatePacker):
        self.packer = packer
        self._keys: set[Key] = set()

    def add(self, key: Key) -> None:
        self._keys.add(key)

    def __contains__(self, item: object) -> bool:
        key = self.packer.pack(item) if isinstance(item, frozenset) else item
        return key in self._keys

    def outside(self, state: State, operators: Iterable[int]) -> Iterator[tuple[int, Key]]:
        """(operator, successor's key) for those of the operators applicable in `state` (indices into the task's)
        whose successor is not in the set, one at a time as they are taken."""
        keys, successor = self._keys, self.packer.successors_of(self.packer.pack(state))
        return ((i, child) for i in operators if (child := successor(i)) not in keys)
