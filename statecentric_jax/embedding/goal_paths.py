"""Goal paths: how each goal atom's objects are joined in a state, counted over the goals not yet reached.

WL colours see a node's surroundings as a tree, so no function of them tells a package in the truck
of its goal city from one in a truck elsewhere when the rest looks alike (`benchmarks/expressivity.py`).
For each goal atom that does not hold, this embedding takes the set of edge-label sequences (at most
`length` edges) along which the atom's last object reaches its first in the state's object graph:
objects as nodes, each atom of two or more arguments (static or fluent) an edge between each pair of
its arguments, labelled by the predicate, the two positions and the direction. The embedding counts
the goals per (predicate, set of sequences). Its vocabulary, those of the training states, does not
grow with the problem; the counts grow with the number of goals, as a cost-to-go should. φ(g) is
zero: in the goal, every goal atom holds.

In a search each state is embedded with its parent named (`Encoder.embed`), and its paths are
derived from the parent's (`derived_goal_paths`): only the goals near the atoms that changed are
walked again, with the same result.

On disk: one JSON file with `length` and the vocabulary, each entry a predicate and its sorted
label sequences (`GoalPathEncoder.load`).
"""

from __future__ import annotations

import collections
import functools
import json
import os
import pathlib
from collections.abc import Sequence

import numpy as np

from statecentric_jax.atomic import replace_atomically
from statecentric_jax.embedding.encoders import Encoder, Pair, TasksAndTrajectories, _common_predicates
from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import Task, atom_arguments, atom_predicate

Label = str
Walk = tuple[Label, ...]  # the edge labels along one walk
GoalPath = tuple[str, tuple[Walk, ...]]  # (goal predicate, its sorted label sequences)
Edges = dict[str, list[tuple[Label, str]]]  # each object's labelled neighbours


@functools.lru_cache(maxsize=1 << 16)
def _atom_edges(atom: str) -> tuple[tuple[str, Label, str], ...]:
    """One edge per pair of the atom's arguments, both directions (atoms recur across states: cached)."""
    name, args = atom_predicate(atom), atom_arguments(atom)
    return tuple(
        edge
        for i in range(len(args))
        for j in range(i + 1, len(args))
        for edge in ((args[i], f"{name}:{i}>{j}", args[j]), (args[j], f"{name}:{j}>{i}", args[i]))
    )


def _edges(atoms: frozenset[str]) -> Edges:
    """The object graph of `atoms`."""
    edges: Edges = collections.defaultdict(list)
    for atom in atoms:
        for source, label, target in _atom_edges(atom):
            edges[source].append((label, target))
    return edges


_static_edges = functools.lru_cache(maxsize=64)(_edges)  # a task's static atoms join every state's graph


def _sequences(graphs: tuple[Edges, Edges], source: str, length: int, targets: set[str]) -> dict[str, set[Walk]]:
    """The label sequences of the walks of at most `length` edges of either graph from `source` to each of
    `targets`. A walk is dropped as soon as no target lies within the edges it has left (edges go both ways,
    so that is a distance from the targets): the same sequences, without walking a grid's every corner."""
    distance = _distances(graphs, targets, length)
    reached: dict[str, set[Walk]] = collections.defaultdict(set)
    frontier: dict[str, set[Walk]] = {source: {()}}
    for left in range(length - 1, -1, -1):  # edges left after this one
        step: dict[str, set[Walk]] = collections.defaultdict(set)
        for node, sequences in frontier.items():
            for edges in graphs:
                for label, neighbour in edges.get(node, ()):
                    if distance.get(neighbour, length + 1) <= left:
                        step[neighbour].update((*sequence, label) for sequence in sequences)
        for node in targets & step.keys():
            reached[node] |= step[node]
        frontier = step
    return reached


def _of_goals(graphs: tuple[Edges, Edges], goals: Sequence[str], length: int) -> dict[str, GoalPath]:
    """(predicate, label sequences from the last object to the first) of each of `goals`."""
    targets: dict[str, set[str]] = collections.defaultdict(set)  # goals that share a last object share its walk
    for goal in goals:
        args = atom_arguments(goal)
        if args:
            targets[args[-1]].add(args[0])
    from_source = {source: _sequences(graphs, source, length, ends) for source, ends in targets.items()}
    paths = {}
    for goal in goals:
        args = atom_arguments(goal)
        found = from_source[args[-1]].get(args[0], set()) if args else set()
        paths[goal] = (atom_predicate(goal), tuple(sorted(found)))
    return paths


def goal_paths_of_each(task: Task, state: frozenset[str], length: int) -> dict[str, GoalPath]:
    """The goal path of each goal atom not in `state`."""
    return _of_goals((_static_edges(task.static), _edges(state)), sorted(task.fluent_goal - state), length)


def goal_paths(task: Task, state: frozenset[str], length: int) -> collections.Counter[GoalPath]:
    """(predicate, label sequences from the last object to the first) of each goal atom not in `state`."""
    return collections.Counter(goal_paths_of_each(task, state, length).values())


def _distances(graphs: tuple[Edges, Edges], sources: set[str], depth: int) -> dict[str, int]:
    """Each object within `depth` edges of any of `sources`, with its distance in edges."""
    distance = dict.fromkeys(sources, 0)
    frontier = set(sources)
    for step in range(1, depth + 1):
        frontier = {n for node in frontier for edges in graphs for _, n in edges.get(node, ()) if n not in distance}
        distance.update(dict.fromkeys(frontier, step))
    return distance


def derived_goal_paths(
    task: Task, parent: frozenset[str], parent_paths: dict[str, GoalPath], state: frozenset[str], length: int
) -> dict[str, GoalPath]:
    """`goal_paths_of_each(task, state, length)`, from those of a `parent` state it differs from in a few atoms.

    A walk of at most `length` edges that the change adds or removes has a first and a last changed
    edge, and its parts before the first and after the last are in both graphs: so its two ends lie
    within `length - 1` edges of changed atoms' objects in the state's graph, together. A goal whose
    objects lie farther keeps the parent's paths; in Logistics that is every goal but those of the
    packages and locations in the one or two cities an action touches."""
    static, edges = _static_edges(task.static), _edges(state)
    changed = {obj for atom in parent ^ state for obj in atom_arguments(atom)}
    distance = _distances((static, edges), changed, length - 1)
    kept, redo = {}, []
    for goal in sorted(task.fluent_goal - state):
        args = atom_arguments(goal)
        near = bool(args) and distance.get(args[-1], length) + distance.get(args[0], length) <= length - 1
        if goal in parent_paths and not near:
            kept[goal] = parent_paths[goal]
        else:
            redo.append(goal)
    return kept | _of_goals((static, edges), redo, length)


class GoalPathEncoder(Encoder):
    kind = "goal_paths"

    def __init__(self, domain: str, predicates: Sequence[tuple[str, int]], length: int, vocabulary: Sequence[GoalPath]):
        super().__init__(domain, predicates)
        if length < 1:
            raise InputError(None, f"goal paths need a length >= 1, not {length}")
        self.length = length
        self.vocabulary = {key: index for index, key in enumerate(vocabulary)}

    @classmethod
    def fit(cls, domain: str, tasks_and_trajectories: TasksAndTrajectories, length: int) -> GoalPathEncoder:
        """The vocabulary of the given (training) states, in a fixed order."""
        predicates = _common_predicates([task for task, _ in tasks_and_trajectories])
        seen = {
            key
            for task, states in tasks_and_trajectories
            for state in states
            for key in goal_paths(task, state, length)
        }
        return cls(domain, predicates, length, sorted(seen))

    @property
    def dim(self) -> int:
        return len(self.vocabulary)

    def embed_with_unseen(
        self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None] | None = None
    ) -> tuple[np.ndarray, float]:
        out = np.zeros((len(pairs), self.dim), np.float32)
        unseen = total = 0
        of_parent: dict[tuple[int, frozenset[str]], dict[str, GoalPath]] = {}  # siblings share their parent's
        for row, (task, state) in enumerate(pairs):
            self._check_task(task)
            parent = parents[row] if parents is not None else None
            if parent is None:
                paths = goal_paths_of_each(task, state, self.length)
            else:
                if (id(task), parent) not in of_parent:
                    of_parent[(id(task), parent)] = goal_paths_of_each(task, parent, self.length)
                paths = derived_goal_paths(task, parent, of_parent[(id(task), parent)], state, self.length)
            for key, count in collections.Counter(paths.values()).items():
                total += count
                column = self.vocabulary.get(key)
                if column is None:
                    unseen += count
                else:
                    out[row, column] = count
        return out, unseen / total if total else 0.0

    def embed_goals(self, tasks: Sequence[Task]) -> np.ndarray:
        return np.zeros((len(tasks), self.dim), np.float32)

    def save(self, path: str | os.PathLike) -> None:
        vocabulary = [[name, [list(sequence) for sequence in sequences]] for name, sequences in self.vocabulary]

        def write(tmp: pathlib.Path) -> None:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"statecentric": self._metadata(length=self.length, vocabulary=vocabulary)}, f)

        replace_atomically(path, write)

    @classmethod
    def load(cls, path: str | os.PathLike) -> GoalPathEncoder:
        try:
            with open(path, encoding="utf-8") as f:
                meta = json.load(f)["statecentric"]
            if meta["kind"] != cls.kind:
                raise ValueError(f"kind {meta['kind']!r}")
            vocabulary = [
                (name, tuple(tuple(sequence) for sequence in sequences)) for name, sequences in meta["vocabulary"]
            ]
            return cls(meta["domain"], meta["predicates"], int(meta["length"]), vocabulary)
        except FileNotFoundError:
            raise InputError(path, "goal-path encoder file not found") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise InputError(path, f"corrupt goal-path encoder file ({type(e).__name__}: {e})") from None
