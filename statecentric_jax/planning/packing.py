"""Compact state keys, for search that must remember millions of states.

A state is a frozenset of atom strings: fast to test and apply operators to, but its hash
table costs about 2 KB for a 40-atom Logistics state. `StatePacker` maps a task's fluent
atoms (the initial state and every operator's add effects, sorted) to numbers and a state
to the bytes of its sorted atom numbers (4 bytes an atom), and back. Equal states give
equal keys, so the keys serve as a closed list, and `unpack(pack(s)) == s`.
"""

from __future__ import annotations

import array

from statecentric_jax.planning.tasks import Task

State = frozenset


class StatePacker:
    def __init__(self, task: Task):
        atoms = sorted(task.init.union(*(op.add for op in task.operators)))
        self._number = {atom: i for i, atom in enumerate(atoms)}
        self._atoms = atoms

    def __len__(self) -> int:
        """The number of fluent atoms (atom numbers run from 0 to len - 1)."""
        return len(self._atoms)

    def pack(self, state: State) -> bytes:
        """The state's key (a KeyError: an atom that neither the initial state nor any operator holds)."""
        return array.array("I", sorted(map(self._number.__getitem__, state))).tobytes()

    def unpack(self, key: bytes) -> State:
        return frozenset(map(self._atoms.__getitem__, array.array("I", key)))


class PackedStates:
    """A set of states stored as keys; `in` takes states or keys."""

    def __init__(self, packer: StatePacker):
        self.packer = packer
        self._keys: set[bytes] = set()

    def add(self, key: bytes) -> None:
        self._keys.add(key)

    def __contains__(self, item: object) -> bool:
        key = item if isinstance(item, bytes) else self.packer.pack(item)  # type: ignore[arg-type]
        return key in self._keys
