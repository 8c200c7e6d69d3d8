"""Relaxed reachability: whether the goal can still be reached from a state when deletes are ignored.

The delete relaxation over-approximates what any plan can make true: an atom that no sequence of
operators reaches while ignoring deletes (and negative preconditions) is never reached. So a state from
which the relaxed exploration misses a goal atom is a dead end, and a search may close it unexpanded
(`decode.prune_dead_ends`). A learned cost-to-go need not see them: in Childsnack, serving the last
gluten-free sandwich to a child who is not allergic, with no gluten-free bread left, serves one more child
and leaves an allergic one who can never be served.

The exploration counts, per operator, its positive preconditions reached so far: each newly reached atom
raises the counts of the operators that need it, an operator whose count is complete fires once and adds
its effects. Each operator and atom is touched once per call, in NumPy, and the call stops as soon as every
goal atom is reached.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from statecentric_jax.planning.tasks import Task


def _grouped(lists: list[list[int]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of `lists` by their items: for item i, `members[starts[i]:starts[i + 1]]` are the lists' indices
    that hold it."""
    items = np.fromiter((item for found in lists for item in found), np.int64)
    owners = np.repeat(np.arange(len(lists), dtype=np.int64), [len(found) for found in lists])
    order = np.argsort(items, kind="stable")
    starts = np.zeros(size + 1, np.int64)
    np.cumsum(np.bincount(items, minlength=size), out=starts[1:])
    return starts, owners[order]


def _ranges(starts: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The concatenated index ranges starts[w]:starts[w + 1] for each w in `which`."""
    lengths = starts[which + 1] - starts[which]
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, np.int64)
    shift = np.repeat(starts[which] - (np.cumsum(lengths) - lengths), lengths)
    return shift + np.arange(total, dtype=np.int64)


class RelaxedReachability:
    """The delete relaxation of one task, explored from any of its states."""

    def __init__(self, task: Task):
        atoms = sorted({atom for op in task.operators for atom in op.pre | op.add} | task.fluent_goal)
        self._index = {atom: number for number, atom in enumerate(atoms)}
        preconditions = [[self._index[atom] for atom in op.pre] for op in task.operators]
        effects = [[self._index[atom] for atom in op.add] for op in task.operators]
        self._needed = np.asarray([len(found) for found in preconditions], np.int64)
        self._free = np.flatnonzero(self._needed == 0)  # operators without positive preconditions
        self._users_start, self._users = _grouped(preconditions, len(atoms))  # per atom: operators needing it
        self._adds = np.fromiter((atom for found in effects for atom in found), np.int64)  # per operator, in turn
        self._adds_start = np.zeros(len(effects) + 1, np.int64)
        np.cumsum([len(found) for found in effects], out=self._adds_start[1:])
        self._goal = np.asarray([self._index[atom] for atom in sorted(task.fluent_goal)], np.int64)
        self._atoms = len(atoms)

    def reaches_goal(self, state: Iterable[str], alive: Iterable[str] | None = None) -> bool:
        """Whether every goal atom is reached from `state` in the delete relaxation (False: a dead end).

        `alive`: a state known to reach the goal so, such as the parent of `state` in a search. Once every atom
        of it that `state` lacks is reached, all of `alive`'s relaxed reach is, so the goal is: the answer is the
        same, and the exploration mostly stops after a few layers instead of reaching the goal (at once where
        `state` lost none of them)."""
        index = self._index
        reached = np.zeros(self._atoms, bool)
        new = np.fromiter((index[atom] for atom in state if atom in index), np.int64)
        reached[new] = True
        lost = np.fromiter((index[atom] for atom in alive or () if atom in index), np.int64)
        lost = lost[~reached[lost]]
        if alive is not None and not len(lost):
            return True
        count = np.zeros(len(self._needed), np.int64)
        fired = np.zeros(len(self._needed), bool)
        ready = self._free
        while True:
            if reached[self._goal].all() or (len(lost) and reached[lost].all()):
                return True
            users = self._users[_ranges(self._users_start, new)]
            np.add.at(count, users, 1)
            ready = np.concatenate([ready, users[count[users] == self._needed[users]]])
            ready = np.unique(ready[~fired[ready]])
            fired[ready] = True
            added = self._adds[_ranges(self._adds_start, ready)]
            new = np.unique(added[~reached[added]])
            if not len(new):
                return False
            reached[new] = True
            ready = np.zeros(0, np.int64)
