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

The walks are met halfway: those of up to `length // 2` edges from the last object, and of the
rest to the first, joined where they meet; each half is walked once per object in a state (goals
share objects). In a search each state is embedded with its parent named (`Encoder.embed`), and its
paths are derived from the parent's (`derived_goal_paths`): its graph is the parent's with the
changed atoms' edges patched in, only the goals near those atoms are joined again, and only the
halves that the change can reach are patched, not walked again: each object's walks of k edges are
counted per neighbour edge that extends a shorter walk to it, so only the changed edges, and the
objects whose shorter walks differ, take out and add their part (`_Memo._patched`; in Rovers a
rover is one edge from every waypoint, and each move would otherwise walk every half again). The
result is the same. Halves walked afresh are shared by content within a search (`_Memo`): walked
only where the neighbours they read are new to the search.

On disk: one JSON file with `length` and the vocabulary, each entry a predicate and its sorted
label sequences (`GoalPathEncoder.load`).
"""

from __future__ import annotations

import collections
import functools
import json
import os
import pathlib
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from statecentric_jax.atomic import replace_atomically
from statecentric_jax.embedding.encoders import Encoder, Pair, TasksAndTrajectories, _common_predicates
from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import Task, atom_arguments, atom_predicate

Label = str
Walk = tuple[Label, ...]  # the edge labels along one walk
GoalPath = tuple[str, tuple[Walk, ...]]  # (goal predicate, its sorted label sequences)
Neighbour = tuple[Label, str, Label]  # (label, neighbour, label back)
Neighbours = tuple[Neighbour, ...]  # one object's, sorted
# neighbours by (label, label back): their objects, each with the number of such edges to it
Groups = tuple[tuple[Label, Label, dict[str, int]], ...]
Edges = dict[str, Neighbours]  # each object's neighbours, one shared tuple per content (`_Memo.neighbours`)
# per number of edges k: the nodes k edges from an end, with the walks' labels
Layers = list[dict[str, frozenset[Walk]]]


class Half(NamedTuple):
    """The walks from (or to) one end, per number of edges, with what each object's walks are made of: for
    each set of walks, how many of its neighbour edges extend a walk of one edge fewer to it (`_Memo._patched`)."""

    walks: Layers
    counts: list[dict[str, dict[frozenset[Walk], int]]]
    generation: int  # of the memo's tables it was taken with (`_Memo.generation`)
    kept: bool = False  # in the memo's tables, shared by the states that read the same neighbours


@functools.lru_cache(maxsize=1 << 16)
def _atom_edges(atom: str) -> tuple[tuple[str, Label, str, Label], ...]:
    """One edge per pair of the atom's arguments, both directions, each with the label of the other
    (atoms recur across states: cached)."""
    name, args = atom_predicate(atom), atom_arguments(atom)
    edges = []
    for i in range(len(args)):
        for j in range(i + 1, len(args)):
            there, back = f"{name}:{i}>{j}", f"{name}:{j}>{i}"
            edges += [(args[i], there, args[j], back), (args[j], back, args[i], there)]
    return tuple(edges)


def _edges(atoms: frozenset[str], memo: _Memo) -> Edges:
    """The object graph of `atoms`."""
    lists: dict[str, list[Neighbour]] = collections.defaultdict(list)
    for atom in atoms:
        for source, label, target, back in _atom_edges(atom):
            lists[source].append((label, target, back))
    return {source: memo.neighbours(neighbours) for source, neighbours in lists.items()}


@functools.lru_cache(maxsize=1 << 16)
def _ends(goal: str) -> tuple[str, str | None, str | None]:
    """A goal atom's predicate, first and last object (None without arguments)."""
    args = atom_arguments(goal)
    return atom_predicate(goal), args[0] if args else None, args[-1] if args else None


EdgeChanges = dict[str, tuple[list[Neighbour], list[Neighbour]]]  # per object: (neighbours taken, given)


def _edge_changes(removed: frozenset[str], added: frozenset[str]) -> EdgeChanges:
    """Per object, the neighbours that the given atoms take from it and give it."""
    changes: EdgeChanges = {}
    for atoms, side in ((removed, 0), (added, 1)):
        for atom in atoms:
            for source, label, target, back in _atom_edges(atom):
                changes.setdefault(source, ([], []))[side].append((label, target, back))
    return changes


def _changed_edges(edges: Edges, changes: EdgeChanges, memo: _Memo) -> Edges:
    """The object graph of a state from `edges`, that of a state it differs from by `changes`: only the
    objects these join get new neighbours."""
    changed = {source: memo.changed(edges.get(source, ()), taken, given) for source, (taken, given) in changes.items()}
    return edges | changed


def _region(edges: Edges, end: str, depth: int) -> tuple[Neighbours, ...]:
    """The neighbours of each object fewer than `depth` edges from `end`, in an order fixed by their contents:
    all that the walks of `depth` edges from `end` read (`_Memo.layers`)."""
    region, frontier = [edges.get(end, ())], [end]
    for _ in range(depth - 1):
        frontier = list(dict.fromkeys(n for node in frontier for _, n, _ in edges.get(node, ())))
        region += [edges.get(node, ()) for node in frontier]
    return tuple(region)


_NO_EDGES = frozenset({()})  # the walks of no edges: one object, so that halves of any end share it by id
Before = tuple[Half, Edges, EdgeChanges]  # a half taken in other edges, and how `edges` differ from those


class _Memo:
    """What the states of one search share, looked up by content: one neighbours tuple per content, and so
    the walks' halves by the neighbours they read (`_region`) and the joined paths by their halves. States near
    each other in a search share most of their halves although their graphs differ (in Satellite, the
    directions a satellite may turn to are the same in most states). Within and across halves, the sets of
    walks recur (objects alike, as Rovers' waypoints): each set is kept once, and extended by a label, or
    joined to another, once. Bounded by `LIMIT` entries a table and `ITEMS` items kept in all: neighbours,
    objects of layers, walks of sets and joined paths (an item is one reference in a table; emptied, every half
    is walked again, so a bound that a search fills often costs more time than its memory saves)."""

    LIMIT = 20_000
    ITEMS = 8_000_000
    PROBE = 32
    HUB = 32

    def __init__(self) -> None:
        self._neighbours: dict[Neighbours, Neighbours] = {}
        self._grouped: dict[int, tuple[Neighbours, Groups, frozenset[str]]] = {}
        self._layers: dict[tuple[object, ...], tuple[tuple[Neighbours, ...], Half]] = {}
        self._joined: dict[tuple[int, int, int], tuple[Half, Half, tuple[Walk, ...]]] = {}
        # the sorted walks by the (ids of the) pairs of sets of walks that meet, kept with those sets
        self._sorted: dict[frozenset[tuple[int, int]], tuple[tuple[Any, ...], tuple[Walk, ...]]] = {}
        self._extended: dict[tuple[frozenset[Walk], Label, bool], frozenset[Walk]] = {}
        self._products: dict[tuple[frozenset[Walk], frozenset[Walk]], frozenset[Walk]] = {}
        self._unions: dict[frozenset[Walk], frozenset[Walk]] = {}
        self._changed: dict[
            tuple[int, tuple[Neighbour, ...], tuple[Neighbour, ...]], tuple[Neighbours, Neighbours]
        ] = {}
        self._items = 0
        self.generation = 0  # how many times emptied
        self.hubs = False  # whether an object has more than `HUB` neighbours
        self._patches = self._looked = self._found = 0  # halves that could be patched; looked up; found

    def _bounded(self) -> None:
        """Room for one more entry: past a bound, all emptied (the states that hold neighbours tuples from
        before then miss, and stay right: a key holds the tuples whose ids it names)."""
        tables: list[dict[Any, Any]] = [self._neighbours, self._grouped, self._layers, self._joined, self._sorted]
        tables += [self._extended, self._products, self._unions, self._changed]
        if max(len(table) for table in tables) >= self.LIMIT or self._items >= self.ITEMS:
            for table in tables:
                table.clear()
            self._items = 0
            self.generation += 1

    def neighbours(self, neighbours: list[Neighbour]) -> Neighbours:
        """The shared tuple of these neighbours (sorted: walks are read as sets)."""
        key = tuple(sorted(neighbours))
        if key not in self._neighbours:
            self.hubs = self.hubs or len(key) > self.HUB
            self._bounded()
            self._neighbours[key] = key
            self._items += len(key)
        return self._neighbours[key]

    def changed(self, neighbours: Neighbours, taken: list[Neighbour], given: list[Neighbour]) -> Neighbours:
        """The shared tuple of `neighbours` less `taken` (one occurrence each: atoms may share an edge) and with
        `given`; kept by the tuple's id and the change, with the tuple (a rover has hundreds of neighbours, a move
        changes one, and a search moves it back and forth: sorting and hashing them again would cost more)."""
        key = (id(neighbours), tuple(taken), tuple(given))
        kept = self._changed.get(key)
        if kept is None or kept[0] is not neighbours:
            listed = list(neighbours)
            for edge in taken:
                listed.remove(edge)
            kept = neighbours, self.neighbours(listed + given)
            self._bounded()
            self._changed[key] = kept
            self._items += 1
        return kept[1]

    def objects(self, neighbours: Neighbours) -> frozenset[str]:
        """The objects of these neighbours (`_group`)."""
        return self._group(neighbours)[2]

    def by_label(self, neighbours: Neighbours) -> Groups:
        """These neighbours grouped by their edges' labels, (label, label back, objects) each: all objects of a
        group extend a walk alike, so the walk is extended once per group (an object of Rovers' waypoints has
        hundreds of neighbours under a few labels). Each object comes with how many such edges join it: a rover
        reaches a waypoint by one `can_traverse` edge per waypoint it may drive to from there, and counting
        walks per object, not per edge, takes that many times fewer steps."""
        return self._group(neighbours)[1]

    def _group(self, neighbours: Neighbours) -> tuple[Neighbours, Groups, frozenset[str]]:
        """These neighbours by label and their objects, kept by the tuple's id, with the tuple."""
        kept = self._grouped.get(id(neighbours))
        if kept is None or kept[0] is not neighbours:
            groups: dict[tuple[Label, Label], list[str]] = {}
            for label, neighbour, back in neighbours:
                groups.setdefault((label, back), []).append(neighbour)
            self._bounded()
            by_label = tuple(
                (label, back, dict(collections.Counter(objects))) for (label, back), objects in groups.items()
            )
            kept = neighbours, by_label, frozenset(neighbour for _, neighbour, _ in neighbours)
            self._grouped[id(neighbours)] = kept
            self._items += len(neighbours)
        return kept

    def layers(self, edges: Edges, end: str, depth: int, backward: bool, before: Before | None = None) -> Half:
        """For k = 0..depth, every object with the label sequences of the walks of k edges from `end` to it
        (backward: from it to `end`); taken once per region (kept with the key, so that the ids in it stay
        those of its tuples). `before`: the same half taken in a graph that differs from `edges` in the
        neighbours of the objects named with it, patched where they differ instead of walked again."""
        if before is not None and before[0].generation != self.generation:
            before = None  # its sets are not this generation's objects: patched, it would share none by id
        if before is not None and not self._worth_looking_up():
            return self._patched(edges, before, backward)
        region = _region(edges, end, depth)
        key = (end, depth, backward, *map(id, region))
        if before is not None:
            self._looked, self._found = self._looked + 1, self._found + (key in self._layers)
        if key not in self._layers:
            half = (
                self._walked(edges, end, depth, backward) if before is None else self._patched(edges, before, backward)
            )
            self._bounded()
            self._layers[key] = region, half._replace(kept=True)
            self._items += sum(map(len, half.walks)) + sum(map(len, half.counts))
        return self._layers[key][1]

    def _worth_looking_up(self) -> bool:
        """Whether a half that could be patched is worth looking up by its region first: where a search comes
        back to the same surroundings (Satellite's directions) most are found, where it rarely does (a rover,
        next to every waypoint, changes every region) the lookup costs more than the patch. Judged on the
        recent lookups, with one in `PROBE` looked up anyway."""
        self._patches += 1
        if self._looked >= 1024:
            self._looked, self._found = self._looked // 2, self._found // 2
        return 4 * self._found >= self._looked or self._patches % self.PROBE == 0

    def _walked(self, edges: Edges, end: str, depth: int, backward: bool) -> Half:
        half = Half([{end: _NO_EDGES}], [{end: {_NO_EDGES: 1}}], self.generation)
        for _ in range(depth):
            # each distinct extended set of walks with the objects it reaches (sets recur: few of them)
            reached: dict[int, tuple[frozenset[Walk], collections.Counter[str]]] = {}
            for node, walks in half.walks[-1].items():
                for label, back, objects in self.by_label(edges.get(node, ())):
                    extended = self._extended_by(walks, back if backward else label, backward)
                    if id(extended) in reached:
                        reached[id(extended)][1].update(objects)
                    else:
                        reached[id(extended)] = extended, collections.Counter(objects)
            counts: dict[str, dict[frozenset[Walk], int]] = collections.defaultdict(dict)
            for extended, reached_objects in reached.values():
                for neighbour, times in reached_objects.items():
                    counts[neighbour][extended] = times
            half.counts.append(dict(counts))
            half.walks.append({node: self._union(list(sets)) for node, sets in counts.items()})
        return half

    def _patched(self, edges: Edges, before: Before, backward: bool) -> Half:
        """`before`'s half in `edges`. The walks of k edges to an object are the union of its neighbours' walks
        of k - 1 edges, each extended by the edge between: counted per neighbour and edge, only the objects
        whose neighbours differ, and those whose walks of k - 1 edges differ, add and take out their part."""
        taken, taken_in, changes = before
        half = Half([taken.walks[0]], [taken.counts[0]], self.generation)
        moved: set[str] = set()  # the objects whose walks of k - 1 edges differ
        for k in range(1, len(taken.walks)):
            was, now = taken.walks[k - 1], half.walks[k - 1]
            differing = moved | {node for node in changes if node in was or node in now}
            if not differing:  # the layer is `taken`'s: shared, not copied
                half.walks.append(taken.walks[k])
                half.counts.append(taken.counts[k])
                continue
            counts, touched = dict(taken.counts[k]), set[str]()

            for node in differing:
                if node in moved:  # all its edges
                    old, new = self.by_label(taken_in.get(node, ())), self.by_label(edges.get(node, ()))
                else:  # the same walks: only the edges that differ
                    old, new = (tuple((label, back, {n: 1}) for label, n, back in listed) for listed in changes[node])
                if node in was:
                    self._count(counts, touched, was[node], old, -1, backward)
                if node in now:
                    self._count(counts, touched, now[node], new, +1, backward)
            walks = dict(taken.walks[k])
            moved = set()
            for node in touched:
                before_walks = walks.pop(node, None)
                if counts[node]:
                    walks[node] = self._union(list(counts[node]))
                else:
                    del counts[node]
                if walks.get(node) is not before_walks and walks.get(node) != before_walks:
                    moved.add(node)
            half.walks.append(walks)
            half.counts.append(counts)
        return half

    def _count(
        self,
        counts: dict[str, dict[frozenset[Walk], int]],
        touched: set[str],
        walks: frozenset[Walk],
        groups: Iterable[tuple[Label, Label, dict[str, int]]],
        sign: int,
        backward: bool,
    ) -> None:
        """Adds (sign 1) or takes out (-1) what `walks` extended along these edges (grouped as `by_label`) give
        their objects; an object's counts are copied on its first change (`touched`), the rest stay shared with
        the half before."""
        for label, back, objects in groups:
            extended = self._extended_by(walks, back if backward else label, backward)
            for neighbour, times in objects.items():
                if neighbour not in touched:
                    touched.add(neighbour)
                    counts[neighbour] = dict(counts.get(neighbour, {}))
                of_neighbour = counts[neighbour]
                left = of_neighbour.get(extended, 0) + sign * times
                if left:
                    of_neighbour[extended] = left
                else:
                    del of_neighbour[extended]

    def _union(self, sets: list[frozenset[Walk]]) -> frozenset[Walk]:
        """The union of these sets, one object per content (sets recur: kept once, and found again by id)."""
        if len(sets) == 1:
            return sets[0]
        union = frozenset().union(*sets)
        if union not in self._unions:
            self._bounded()
            self._unions[union] = union
            self._items += len(union)
        return self._unions[union]

    def _extended_by(self, walks: frozenset[Walk], label: Label, backward: bool) -> frozenset[Walk]:
        key = (walks, label, backward)
        if key not in self._extended:
            self._bounded()
            self._extended[key] = frozenset((label, *walk) if backward else (*walk, label) for walk in walks)
            self._items += len(walks)
        return self._extended[key]

    def joined(self, ahead: Half, behind: Half, length: int) -> tuple[Walk, ...]:
        """The sorted label sequences of the walks of 1..`length` edges from the end of `ahead` to that of
        `behind`: a walk of n edges is its first n // 2 edges (in `ahead`) and the rest (in `behind`), which
        meet at one object. Once per pair of halves kept in the tables (kept with the key, as in `layers`;
        a patched half that is not kept is its state's alone, and keeping it here would keep its walks)."""
        key = (id(ahead.walks), id(behind.walks), length)
        if key in self._joined:
            return self._joined[key][2]
        halves: dict[tuple[int, int], tuple[frozenset[Walk], frozenset[Walk]]] = {}  # by content: many alike
        for n in range(1, length + 1):
            first, rest = ahead.walks[n // 2], behind.walks[n - n // 2]
            for node in first.keys() & rest.keys():
                heads, tails = first[node], rest[node]
                halves[id(heads), id(tails)] = heads, tails
        meeting = frozenset(halves)
        if meeting not in self._sorted:  # other halves often meet in the same sets of walks
            found = set().union(*(self._product(heads, tails) for heads, tails in halves.values()))
            self._bounded()
            self._sorted[meeting] = tuple(halves.values()), tuple(sorted(found))
            self._items += len(found)
        paths = self._sorted[meeting][1]
        if ahead.kept and behind.kept:
            self._bounded()
            self._joined[key] = ahead, behind, paths
            self._items += 1
        return paths

    def _product(self, heads: frozenset[Walk], tails: frozenset[Walk]) -> frozenset[Walk]:
        key = (heads, tails)
        if key not in self._products:
            self._bounded()
            self._products[key] = frozenset(head + tail for head in heads for tail in tails)
            self._items += len(heads) * len(tails)
        return self._products[key]


class Walks(NamedTuple):
    """A state's object graph, and the walks' halves taken in it from goals' objects (`_of_goals`): a state
    derived from it reuses those that its change cannot reach, and shares its memo."""

    edges: Edges
    ahead: dict[str, Half]  # from each goal's last object, length // 2 edges
    behind: dict[str, Half]  # to each goal's first object, the other length - length // 2 edges
    memo: _Memo

    @classmethod
    def of(cls, task: Task, state: frozenset[str]) -> Walks:
        """The graph of the state and the task's static atoms, no walks taken yet."""
        memo = _Memo()
        return cls(_edges(task.static | state, memo), {}, {}, memo)


def _of_goals(
    walks: Walks, goals: Sequence[str], length: int, before: tuple[Walks, EdgeChanges] | None = None
) -> dict[str, GoalPath]:
    """(predicate, label sequences from the last object to the first) of each of `goals`: walks met halfway,
    each half walked once per object (goals share objects) and kept in `walks`. `before`: the walks of a
    state whose graph differs by the changes given, whose halves are patched (`_Memo.layers`)."""
    edges, ahead, behind, memo = walks
    taken, changes = before if before is not None else (Walks({}, {}, {}, memo), {})

    paths = {}
    for goal in goals:
        predicate, first, last = _ends(goal)
        found: tuple[Walk, ...] = ()
        if first is not None and last is not None:
            if last not in ahead:
                was = (taken.ahead[last], taken.edges, changes) if last in taken.ahead else None
                ahead[last] = memo.layers(edges, last, length // 2, backward=False, before=was)
            if first not in behind:
                was = (taken.behind[first], taken.edges, changes) if first in taken.behind else None
                behind[first] = memo.layers(edges, first, length - length // 2, backward=True, before=was)
            found = memo.joined(ahead[last], behind[first], length)
        paths[goal] = (predicate, found)
    return paths


def goal_paths_of_each(
    task: Task, state: frozenset[str], length: int, walks: Walks | None = None
) -> dict[str, GoalPath]:
    """The goal path of each goal atom not in `state`; `walks`, if given, with the state's graph (`_edges`),
    keeps the walks taken."""
    walks = Walks.of(task, state) if walks is None else walks
    return _of_goals(walks, sorted(task.fluent_goal - state), length)


def goal_paths(task: Task, state: frozenset[str], length: int) -> collections.Counter[GoalPath]:
    """(predicate, label sequences from the last object to the first) of each goal atom not in `state`."""
    return collections.Counter(goal_paths_of_each(task, state, length).values())


def _distances(edges: Edges, sources: Iterable[str], depth: int, memo: _Memo) -> dict[str, int]:
    """Each object within `depth` edges of any of `sources`, with its distance in edges."""
    distance = dict.fromkeys(sources, 0)
    frontier = set(distance)
    for step in range(1, depth + 1):
        if memo.hubs:  # a hub's neighbours read as one set of objects (a rover's: every waypoint)
            frontier = set().union(*(memo.objects(edges.get(node, ())) for node in frontier)) - distance.keys()
        else:
            frontier = {n for node in frontier for _, n, _ in edges.get(node, ()) if n not in distance}
        distance.update(dict.fromkeys(frontier, step))
    return distance


def _goals_by_end(task: Task) -> dict[str, list[tuple[str, str]]]:
    """The task's fluent goal atoms with arguments by each of their two end objects (first and last), each
    with its other end."""
    by_end: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    for goal in task.fluent_goal:
        _, first, last = _ends(goal)
        if first is not None and last is not None:
            by_end[last].append((goal, first))
            by_end[first].append((goal, last))
    return by_end


class Change(NamedTuple):
    """How a state's goal paths differ from its parent's: the goals whose parent path no longer counts
    (reached, or near the change), the paths of the unreached goals walked again, and the state's walks
    (its graph, and the halves taken or kept for those goals)."""

    gone: list[str]
    paths: dict[str, GoalPath]
    walks: Walks


def goal_path_change(
    task: Task,
    parent: frozenset[str],
    parent_paths: dict[str, GoalPath],
    state: frozenset[str],
    length: int,
    parent_walks: Walks | None = None,
    by_end: dict[str, list[tuple[str, str]]] | None = None,
    keep: bool = False,
) -> Change:
    """The goal paths of `state` as a change to those of a `parent` state it differs from in a few atoms
    (`parent_paths = goal_paths_of_each(task, parent, length, parent_walks)`), in time that grows with the
    change, not with the number of goals.

    A walk of at most `length` edges that the change adds or removes has a first and a last changed
    edge, and its parts before the first and after the last are in both graphs: so its two ends lie
    within `length - 1` edges of changed edges' objects in the state's graph, together. A goal whose
    objects lie farther keeps the parent's paths; in Logistics that is every goal but those of the
    packages and locations in the one or two cities an action touches. Likewise the walks of at most
    d edges from an object at least d edges away from every changed edge's object are the parent's
    (an atom of fewer than two objects is no edge: it changes no walk).
    The distances are taken to `length - 2` edges only (past that, a search reaches the many objects
    near hubs such as Satellite's modes): an end `length - 1` edges away counts only beside an end of
    distance 0, so it is told by its neighbours. `by_end`: `_goals_by_end(task)`, computed once for many
    states. `keep`: the change's walks keep every half of the parent's that the change cannot reach, not
    only the walked goals' (for a state whose many children derive from it)."""
    removed, added = parent - state, state - parent
    if parent_walks is None:
        parent_walks = Walks.of(task, parent)
    if by_end is None:
        by_end = _goals_by_end(task)
    changes = _edge_changes(removed - task.static, added)  # static atoms stay, named or not
    edges = _changed_edges(parent_walks.edges, changes, parent_walks.memo)
    changed = changes.keys()  # the changed edges' ends
    depth = max(length - 2, 0)
    distance = _distances(edges, changed, depth, parent_walks.memo)

    redo = set(removed & task.fluent_goal)  # unreached again: no parent path
    for end in distance.keys() & by_end.keys():
        from_end = distance[end]
        if from_end > (length - 1) // 2:
            continue  # a goal near the change has an end this near too: found there
        for goal, other_end in by_end[end]:
            to_other = distance.get(other_end)
            if to_other is None:  # farther than depth: length - 1 edges away where a neighbour is depth away
                rim = from_end == 0 and length >= 2
                near = rim and any(distance.get(n) == depth for _, n, _ in edges.get(other_end, ()))
            else:
                near = from_end + to_other <= length - 1
            if near and goal not in state:
                redo.add(goal)
    gone = [goal for goal in added if goal in parent_paths] + [goal for goal in redo if goal in parent_paths]
    reused = Walks(edges, {}, {}, parent_walks.memo)
    if keep:
        lasts, firsts = list(parent_walks.ahead), list(parent_walks.behind)
    else:
        lasts = [last for _, _, last in map(_ends, redo) if last in parent_walks.ahead]
        firsts = [first for _, first, _ in map(_ends, redo) if first in parent_walks.behind]
    for last in lasts:
        if distance.get(last, length) >= length // 2:
            reused.ahead[last] = parent_walks.ahead[last]
    for first in firsts:
        if distance.get(first, length) >= length - length // 2:
            reused.behind[first] = parent_walks.behind[first]
    return Change(gone, _of_goals(reused, sorted(redo), length, (parent_walks, changes)), reused)


def derived_goal_paths(
    task: Task,
    parent: frozenset[str],
    parent_paths: dict[str, GoalPath],
    state: frozenset[str],
    length: int,
    parent_walks: Walks | None = None,
) -> dict[str, GoalPath]:
    """`goal_paths_of_each(task, state, length)`, from those of a `parent` state (`goal_path_change`)."""
    return _applied(parent_paths, goal_path_change(task, parent, parent_paths, state, length, parent_walks))


def _applied(parent_paths: dict[str, GoalPath], change: Change) -> dict[str, GoalPath]:
    kept = parent_paths.keys() - set(change.gone)
    return {goal: parent_paths[goal] for goal in kept} | change.paths


class _Parent(NamedTuple):
    """What the children of one state share: its walks, goal paths and their embedding."""

    task: Task
    state: frozenset[str]
    walks: Walks
    paths: dict[str, GoalPath]
    by_end: dict[str, list[tuple[str, str]]]
    counts: np.ndarray
    unseen: int
    total: int


_SEARCHES = 32  # searches whose last parent `GoalPathEncoder` keeps (each holds its walks and memo)


class GoalPathEncoder(Encoder):
    kind = "goal_paths"

    def __init__(self, domain: str, predicates: Sequence[tuple[str, int]], length: int, vocabulary: Sequence[GoalPath]):
        super().__init__(domain, predicates)
        if length < 1:
            raise InputError(None, f"goal paths need a length >= 1, not {length}")
        self.length = length
        self.vocabulary = {key: index for index, key in enumerate(vocabulary)}
        self._last_parents: dict[int, _Parent] = {}  # per task (by id), its last parent; least recent first
        self._columns: dict[tuple[str, int], tuple[tuple[Walk, ...], int | None]] = {}

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
        of_parent: dict[tuple[int, frozenset[str]], _Parent] = {}  # siblings share it
        for row, (task, state) in enumerate(pairs):
            self._check_task(task)
            parent = parents[row] if parents is not None else None
            if parent is None:
                counts, row_unseen, row_total = self._counts(goal_paths_of_each(task, state, self.length).values())
                out[row] = counts
            else:
                if (id(task), parent) not in of_parent:
                    of_parent[(id(task), parent)] = self._parent(task, parent)
                known = of_parent[(id(task), parent)]
                gone, paths, _ = goal_path_change(
                    task, parent, known.paths, state, self.length, known.walks, known.by_end
                )
                out[row] = known.counts
                dropped_unseen, dropped_total = self._tally(out[row], (known.paths[goal] for goal in gone), -1)
                row_unseen, row_total = self._tally(out[row], paths.values(), 1)
                row_unseen += known.unseen - dropped_unseen
                row_total += known.total - dropped_total
            unseen += row_unseen
            total += row_total
        return out, unseen / total if total else 0.0

    def _parent(self, task: Task, state: frozenset[str]) -> _Parent:
        """A parent's walks and paths: derived from the last parent of the same task (a search expands states
        near each other), else walked afresh. The last parent is kept per task, for up to `_SEARCHES` tasks:
        searches decoded together embed their parents in turn, and one kept for all would be another task's."""
        last = self._last_parents.pop(id(task), None)
        if last is not None and last.task is task:
            change = goal_path_change(
                task, last.state, last.paths, state, self.length, last.walks, last.by_end, keep=True
            )
            walks, paths, by_end = change.walks, _applied(last.paths, change), last.by_end
        else:
            walks = Walks.of(task, state)
            paths, by_end = goal_paths_of_each(task, state, self.length, walks), _goals_by_end(task)
        parent = _Parent(task, state, walks, paths, by_end, *self._counts(paths.values()))
        self._last_parents[id(task)] = parent
        if len(self._last_parents) > _SEARCHES:
            del self._last_parents[next(iter(self._last_parents))]
        return parent

    def _counts(self, paths: Iterable[GoalPath]) -> tuple[np.ndarray, int, int]:
        """The embedding of these goal paths, how many fall outside the vocabulary, and how many in all."""
        counts = np.zeros(self.dim, np.float32)
        return counts, *self._tally(counts, paths, 1)

    def _tally(self, row: np.ndarray, paths: Iterable[GoalPath], step: int) -> tuple[int, int]:
        """Add `step` to `row` at each path's column (a child's few changed paths: cheaper than rows of their
        own); how many paths fall outside the vocabulary, and how many in all."""
        unseen = total = 0
        for key in paths:
            total += 1
            column = self._column(key)
            if column is None:
                unseen += 1
            else:
                row[column] += step
        return unseen, total

    def _column(self, path: GoalPath) -> int | None:
        """The vocabulary's column of a goal path, found by the id of its label sequences: a search's paths share
        them (`_Memo.joined`), and hashing them anew costs as much as finding them."""
        predicate, sequences = path
        kept = self._columns.get((predicate, id(sequences)))
        if kept is None or kept[0] is not sequences:
            if len(self._columns) >= _Memo.LIMIT:
                self._columns.clear()
            kept = sequences, self.vocabulary.get(path)
            self._columns[(predicate, id(sequences))] = kept
        return kept[1]

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
