"""wlplan's WL colour histograms of ILGs, recomputed incrementally in Python.

Decoding embeds every successor of every beam state: many states of one task,
each a few atoms away from a state embedded just before (its parent or a
sibling). wlplan rebuilds and recolours the whole graph per state (~850 nodes on
large VisitAll problems, mostly static atoms); here a state's node colours are
derived from those of a cached nearby state, recolouring only the nodes within
`iterations` hops of the changed atoms, and its histogram is the cached one
plus the difference.

The result equals wlplan 2.1.0's `embed` exactly for the vocabulary of a saved
feature generator (ILG, WL, no pruning, no domain constants; `from_wlplan_json`
returns None for any other configuration, and the caller uses wlplan):
* ILG nodes: every object (colour 0); every goal atom (colour 1 + 5p + 0 if
  it holds, + 1 if not); every other atom of the state (1 + 5p + 4). p is the
  predicate's position in the saved domain (wlplan's sorted order, which the
  encoder also gives wlplan when fitting). Edges join an atom and its i-th
  argument in both directions, labelled i.
* Layer 0 maps a node's raw colour to a colour id; layer j maps the key
  [(label, neighbour colour, count) sorted by (label, colour)..., own colour]
  of layer j-1 colours to an id (count always 1 without multiset hashing).
* A key not in the vocabulary, or one involving an unseen colour, is unseen
  (-1) from then on. Unseen occurrences are dropped from the histogram and
  counted; the histogram counts seen colour ids over all layers 0..iterations.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import Task, atom_arguments, atom_predicate

UNSEEN = -1  # wlplan's colour for keys outside the vocabulary
ABSENT = -2  # the node is not in this state's graph
_T_POS_GOAL, _F_POS_GOAL, _NON_GOAL, _DESCRIPTIONS = 0, 1, 4, 5  # wlplan's ILGFactDescription
_CACHE_ENTRIES = 1 << 24  # node colours kept for later states to start from (~128 MiB)
_CANDIDATES = 64  # recent states of a task tried as the starting point of a new one
_GOOD_ENOUGH = 2  # stop trying at a state this close (one atom swapped for another)


class Vocabulary:
    """A wlplan WL feature generator's colour hash, keys as tuples of ints."""

    def __init__(self, iterations: int, multiset: bool, predicates: Sequence[tuple[str, int]], layers: Sequence[dict]):
        self.iterations = iterations
        self.multiset = multiset
        self.predicates = {name: (index, arity) for index, (name, arity) in enumerate(predicates)}
        self.layers = tuple(layers)
        self.dim = sum(len(layer) for layer in layers)

    @classmethod
    def from_wlplan_json(cls, data: dict) -> Vocabulary | None:
        """From wlplan's saved JSON; None if its configuration is one this module does not reproduce."""
        domain = data["domain"]
        supported = (
            data["feature_name"] == "wl"
            and data["graph_representation"] == "ilg"
            and data["pruning"] == "none"
            and not domain["constant_objects"]
        )
        if not supported:
            return None
        iterations = int(data["iterations"])
        layers: list[dict] = [{int(key): int(value) for key, value in data["colour_hash"][0].items()}]
        for layer in data["colour_hash"][1 : iterations + 1]:
            layers.append({tuple(int(t) for t in key.split(".")): int(value) for key, value in layer.items()})
        return cls(iterations, bool(data["multiset_hash"]), [(str(n), int(a)) for n, a in domain["predicates"]], layers)


class _Record:
    """One state's node colours per layer (indexed by node; ABSENT beyond the list), histogram and counts."""

    __slots__ = ("colours", "hist", "nodes", "unseen")

    def __init__(self, colours: list[list[int]], hist: np.ndarray, unseen: int, nodes: int):
        self.colours = colours
        self.hist = hist
        self.unseen = unseen  # unseen colour occurrences over all layers
        self.nodes = nodes  # ILG nodes

    @property
    def entries(self) -> int:
        """Its size in list slots (8 bytes each), counting the histogram."""
        return sum(len(layer) for layer in self.colours) + self.hist.nbytes // 8


class TaskGraph:
    """The ILG of one task over every atom met so far; node ids: objects first, then atoms.

    A state is a bit mask of its fluent atoms (static atoms are in every
    graph), which makes the distance between two states one popcount.
    """

    def __init__(self, task: Task, vocabulary: Vocabulary):
        self.task = task
        self.vocabulary = vocabulary
        self._objects = len(task.objects)
        self._node: dict[str, int] = {obj: i for i, obj in enumerate(task.objects)}
        self._bit: dict[str, int] = {}  # non-static atom -> its bit in state masks
        self.fluent: list[int] = []  # bit -> node
        self.args: list[tuple[int, ...]] = [()] * len(task.objects)  # atom node -> argument object nodes
        self.incident: list[list[tuple[int, int]]] = [[] for _ in task.objects]  # object -> (label, atom node)
        self.neighbours: list[list[int]] = [[] for _ in task.objects]
        object_colour = vocabulary.layers[0].get(0, UNSEEN)
        self.present0 = [object_colour] * len(task.objects)  # layer-0 colour if the node is in the graph
        self.absent0 = [ABSENT] * len(task.objects)  # ... and if it is not (goal atoms are always in it)
        for atom in sorted(task.static | task.goal):
            self._add_atom(atom)
        self.records: collections.OrderedDict[int, _Record] = collections.OrderedDict()  # recent states, oldest first
        start = _Record([[] for _ in range(vocabulary.iterations + 1)], np.zeros(vocabulary.dim, np.float32), 0, 0)
        fixed = [(v, self.absent0[v] if atom in self._bit else self.present0[v]) for atom, v in self._node.items()]
        self.base = _derive(self, start, fixed)  # no fluent atom true

    @property
    def size(self) -> int:
        return len(self.args)

    def _add_atom(self, atom: str) -> None:
        name, args = atom_predicate(atom), atom_arguments(atom)
        index, arity = self.vocabulary.predicates.get(name, (None, None))
        where = self.task.problem_file
        if index is None or arity != len(args):
            raise InputError(where, f"a state does not fit the problem: {atom} is not an atom of the domain")
        missing = [a for a in args if self._node.get(a, self._objects) >= self._objects]
        if missing:
            raise InputError(where, f"a state does not fit the problem: {atom} names unknown object '{missing[0]}'")
        v = len(self.args)
        self._node[atom] = v
        self.args.append(tuple(self._node[a] for a in args))
        self.incident.append([])
        self.neighbours.append(list(self.args[v]))
        for label, obj in enumerate(self.args[v]):
            self.incident[obj].append((label, v))
            self.neighbours[obj].append(v)
        layer0 = self.vocabulary.layers[0]
        goal = atom in self.task.goal
        self.present0.append(layer0.get(1 + index * _DESCRIPTIONS + (_T_POS_GOAL if goal else _NON_GOAL), UNSEEN))
        self.absent0.append(layer0.get(1 + index * _DESCRIPTIONS + _F_POS_GOAL, UNSEEN) if goal else ABSENT)
        if atom not in self.task.static:
            self._bit[atom] = 1 << len(self.fluent)
            self.fluent.append(v)

    def mask(self, state: frozenset[str]) -> int:
        """The state's fluent atoms as a bit mask (static atoms in `state` are ignored)."""
        try:
            return sum(map(self._bit.__getitem__, state))
        except KeyError:
            for atom in state:
                if atom not in self._bit and atom not in self.task.static:
                    self._add_atom(atom)
            return sum(self._bit.get(atom, 0) for atom in state)


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _derive(graph: TaskGraph, parent: _Record, changes: list[tuple[int, int]]) -> _Record:
    """The record of the state whose layer-0 colours are `parent`'s with `changes` (node, colour) applied.

    Layer j changes only at nodes whose own or a neighbour's layer j-1 colour
    changed, so only those are recoloured. Keys that contain UNSEEN never match
    the vocabulary (its keys hold no negative number), which gives wlplan's
    rule that unseen colours stay unseen.
    """
    n = graph.size
    colours = []
    for layer in parent.colours:
        layer = layer.copy()
        if len(layer) < n:
            layer.extend([ABSENT] * (n - len(layer)))
        colours.append(layer)
    vocabulary = graph.vocabulary
    args, incident, neighbours, multiset = graph.args, graph.incident, graph.neighbours, vocabulary.multiset
    gone, came = [], []  # colours (any layer) that leave and enter the histogram

    changed = []
    current = colours[0]
    for v, new in changes:
        old = current[v]
        if new != old:
            current[v] = new
            changed.append(v)
            gone.append(old)
            came.append(new)
    nodes = parent.nodes + gone.count(ABSENT) - came.count(ABSENT)

    for j in range(1, vocabulary.iterations + 1):
        previous, current, lookup = colours[j - 1], colours[j], vocabulary.layers[j]
        candidates = set(changed)
        for v in changed:
            candidates.update(neighbours[v])
        changed = []
        for v in candidates:
            own = previous[v]
            atom_args = args[v]
            if own < 0:  # absent stays absent, unseen stays unseen
                new = own
            elif len(atom_args) == 2:  # an atom: one neighbour per label, all objects (always in the graph)
                a0, a1 = atom_args
                new = lookup.get((0, previous[a0], 1, 1, previous[a1], 1, own), UNSEEN)
            elif len(atom_args) == 1:
                new = lookup.get((0, previous[atom_args[0]], 1, own), UNSEEN)
            elif atom_args:
                key = tuple(x for label, obj in enumerate(atom_args) for x in (label, previous[obj], 1))
                new = lookup.get((*key, own), UNSEEN)
            else:  # an object (or a nullary atom, which has no neighbours): its atoms' colours
                counts: dict[tuple[int, int], int] = {}
                for label, atom in incident[v]:
                    colour = previous[atom]
                    if colour != ABSENT:
                        pair = (label, colour)
                        counts[pair] = counts.get(pair, 0) + 1 if multiset else 1
                flat: list[int] = []
                for (label, colour), count in sorted(counts.items()):
                    flat += (label, colour, count)
                flat.append(own)
                new = lookup.get(tuple(flat), UNSEEN)
            old = current[v]
            if new != old:
                current[v] = new
                changed.append(v)
                gone.append(old)
                came.append(new)

    # Colours shifted by 2: ABSENT and UNSEEN land in bins 0 and 1, colour c in bin c + 2.
    size = vocabulary.dim + 2
    shift = np.bincount(np.array(came, np.int64) + 2, minlength=size)
    shift -= np.bincount(np.array(gone, np.int64) + 2, minlength=size)
    hist = parent.hist.copy()
    hist += shift[2:]
    return _Record(colours, hist, parent.unseen + int(shift[1]), nodes)


class FastWL:
    """Embeds (TaskGraph, state) pairs, keeping recent states' colours to start later states from."""

    def __init__(self, vocabulary: Vocabulary, cache_entries: int = _CACHE_ENTRIES, candidates: int = _CANDIDATES):
        self.vocabulary = vocabulary
        self._cache_entries = cache_entries
        self._candidates = candidates
        self._lru: collections.OrderedDict[tuple[TaskGraph, int], int] = collections.OrderedDict()  # -> entries
        self._entries = 0

    def graph(self, task: Task) -> TaskGraph:
        return TaskGraph(task, self.vocabulary)

    def embed(self, pairs: Sequence[tuple[TaskGraph, frozenset[str]]]) -> tuple[np.ndarray, int, int]:
        """float32 [n, dim] histograms, the unseen colour occurrences, and all colour occurrences."""
        out = np.zeros((len(pairs), self.vocabulary.dim), np.float32)
        unseen = total = 0
        for row, (graph, state) in enumerate(pairs):
            record = self._record(graph, graph.mask(state))
            out[row] = record.hist
            unseen += record.unseen
            total += record.nodes * (self.vocabulary.iterations + 1)
        return out, unseen, total

    def _record(self, graph: TaskGraph, mask: int) -> _Record:
        records = graph.records
        record = records.get(mask)
        if record is not None:
            self._touch(graph, mask)
            return record
        start, start_mask, distance = graph.base, 0, mask.bit_count()
        for other, candidate in itertools.islice(reversed(records.items()), self._candidates):
            d = (other ^ mask).bit_count()
            if d < distance:
                start, start_mask, distance = candidate, other, d
                if d <= _GOOD_ENOUGH:
                    break
        if start is not graph.base:
            self._touch(graph, start_mask)
        fluent, present0, absent0 = graph.fluent, graph.present0, graph.absent0
        changes = []
        for b in _bits(mask ^ start_mask):
            v = fluent[b]
            changes.append((v, present0[v] if mask >> b & 1 else absent0[v]))
        record = _derive(graph, start, changes)
        records[mask] = record
        entries = record.entries
        self._lru[(graph, mask)] = entries
        self._entries += entries
        while self._entries > self._cache_entries and len(self._lru) > 1:
            (old_graph, old_mask), old_entries = self._lru.popitem(last=False)
            del old_graph.records[old_mask]
            self._entries -= old_entries
        return record

    def _touch(self, graph: TaskGraph, mask: int) -> None:
        graph.records.move_to_end(mask)
        self._lru.move_to_end((graph, mask))
