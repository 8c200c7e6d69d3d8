"""Twin objects: the successors that differ only by interchangeable objects, kept once.

Two objects are twins in a state when each fills the same operator parameters as the other (the same
(action, argument position) pairs among the task's ground operators: a proxy for their types) and the
state, the static atoms and the goal say the same of each, with the object itself left out. Swapping
twins then maps the state, the statics, the goal and the operators onto themselves: it is a symmetry of
the task from that state on. Two applicable operators that differ only by a permutation of twins lead to
isomorphic states, with the same distance to the goal and the same WL colours; `Orbits` keeps the first
(in operator order) of each such orbit, as orbit search does (Domshlak, Katz and Shleyfman 2012) with the
simplest symmetries one can read off a state. A plan from a pruned child is a permuted plan from the one
kept, so a complete search stays complete.

In Childsnack every sandwich not yet made is a twin of the others, and so is every bread (and content)
portion of the same kind: of the |sandwiches| × |bread| × |content| ways to make one, one per kind of
bread and content is kept.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterable, Sequence

from statecentric_jax.planning.tasks import Operator, Task


@functools.lru_cache(maxsize=1 << 16)
def _sayings(atom: str) -> tuple[tuple[str, str], ...]:
    """What the atom says of each of its objects: the atom with the object's name replaced by '*' (atoms recur
    across states: cached)."""
    words = _words(atom)
    return tuple((name, " ".join("*" if word == name else word for word in words)) for name in set(words[1:]))


@functools.lru_cache(maxsize=1 << 16)
def _words(atom_or_operator: str) -> tuple[str, ...]:
    return tuple(atom_or_operator[1:-1].split(" "))


def _described(atoms: Iterable[str], prefix: str = "") -> dict[str, list[str]]:
    """Per object, what the atoms say of it (distinct for distinct atoms)."""
    said: dict[str, list[str]] = collections.defaultdict(list)
    for atom in atoms:
        for name, text in _sayings(atom):
            said[name].append(prefix + text)
    return said


class Twins:
    """The twin classes of a task's objects, per state."""

    def __init__(self, task: Task):
        roles: dict[str, set[tuple[str, int]]] = collections.defaultdict(set)
        for op in task.operators:
            words = op.name[1:-1].split(" ")  # not cached: a task can have a million operators
            for position, name in enumerate(words[1:]):
                roles[name].add((words[0], position))
        fixed = _described(task.static)
        for name, said in _described(task.goal, "goal ").items():
            fixed[name] += said
        self.candidates = [name for name in task.objects if name not in task.constants]
        self.fixed = {name: (frozenset(roles[name]), frozenset(fixed.get(name, ()))) for name in self.candidates}
        self._last: tuple[frozenset[str], dict[str, frozenset[str]]] | None = None  # the state last asked, said

    def classes(self, state: frozenset[str]) -> dict[str, tuple[str, ...]]:
        """Each object with a twin in `state`, with its class (in the task's object order)."""
        said = self._said(state)
        groups: dict[tuple, list[str]] = collections.defaultdict(list)
        nothing: frozenset[str] = frozenset()
        for name in self.candidates:
            groups[(self.fixed[name], said.get(name, nothing))].append(name)
        return {name: tuple(group) for group in groups.values() if len(group) > 1 for name in group}

    def _said(self, state: frozenset[str]) -> dict[str, frozenset[str]]:
        """Per object, what `state` says of it; from the state last asked where the two differ in few atoms (a
        search expands states near each other), only the objects of those atoms described again."""
        last = self._last
        removed, added = (last[0] - state, state - last[0]) if last is not None else ((), ())
        if last is not None and len(removed) + len(added) <= len(state) // 2:
            said = dict(last[1])
            changed: dict[str, set[str]] = {}
            for atom in removed:
                for name, text in _sayings(atom):
                    changed.setdefault(name, set(said.get(name, ()))).discard(text)
            for atom in added:
                for name, text in _sayings(atom):
                    changed.setdefault(name, set(said.get(name, ()))).add(text)
            said.update((name, frozenset(texts)) for name, texts in changed.items())
        else:
            said = {name: frozenset(texts) for name, texts in _described(state).items()}
        self._last = state, said
        return said


class Orbits:
    """The applicable operators of one state, one per orbit under the permutations of its twins."""

    def __init__(self, operators: Sequence[Operator], applicable: Sequence[int], twins: dict[str, tuple[str, ...]]):
        self.kept: list[int] = []
        self._representative: dict[str, str] = {}  # operator name -> the name of the one kept of its orbit
        first: dict[tuple[str, ...], str] = {}
        for index in applicable:
            name = operators[index].name
            key = _canonical(name, twins)
            if key not in first:
                first[key] = name
                self.kept.append(index)
            self._representative[name] = first[key]

    def representatives(self, names: Iterable[str]) -> frozenset[str]:
        """The operators kept for the orbits of `names` (applicable ones; others are left out)."""
        return frozenset(self._representative[name] for name in names if name in self._representative)


def _canonical(name: str, twins: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The operator's words with each twin renamed to the first member of its class not yet used, in order
    of appearance: equal exactly for the operators that a permutation of twins maps onto each other."""
    words = _words(name)
    if twins.keys().isdisjoint(words[1:]):
        return words
    renamed: dict[str, str] = {}
    used: dict[tuple[str, ...], int] = {}
    out = [words[0]]
    for word in words[1:]:
        group = twins.get(word)
        if group is None:
            out.append(word)
            continue
        if word not in renamed:
            count = used.get(group, 0)
            renamed[word] = group[count]
            used[group] = count + 1
        out.append(renamed[word])
    return tuple(out)
