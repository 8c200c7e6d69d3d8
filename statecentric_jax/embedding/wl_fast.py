"""wlplan's WL colour histograms of ILGs for batches of states, refined incrementally in NumPy.

Decoding embeds every successor of every beam state: many states of many tasks,
each a few atoms away from its parent, embedded one call before. wlplan rebuilds
and recolours the whole graph per state (~850 nodes on large VisitAll problems,
mostly static atoms). Here a state starts from the node colours of a cached
state (its parent when the caller names it, else the task's last embedded state
or the state with no fluent atom), and only nodes within `iterations` hops of
the changed atoms are recoloured; its histogram is the start's plus the
difference. A state keeps its colours as a copy where the states derived
together have few colours in all, else as its changes from a dense row of its
start's colours, made once for all the children of that start (a copy per child
costs a whole graph's colours: on Blocks, about n² `on` atoms). One call does
this for the whole batch at once, with array operations over (state, node)
pairs: neighbour colours are gathered from the start rows (and the changes made
so far; of an object's atoms, only those its start's graph holds or the state
adds: on Blocks an object has about 2n `on` atoms, nearly all absent), each node's key is hashed (a sum of mixed
(label, colour) codes, so no per-node sorting is needed for the lookup), looked
up with `searchsorted` among the vocabulary's hashed keys, and then compared
element by element with the vocabulary key it hit, so a hash collision can
never give a wrong colour. Without multiset hashing, where many states share a
start and their nodes have many neighbours (a Miconic floor has an `above` atom
per floor), a key is instead the start's key, read once for all those states,
with the codes of the neighbours that changed taken out and put in (with counts,
so a code goes only when no neighbour has it any more).

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

A task's graph holds every atom its states can hold (initial state, goal,
statics and the operators' add effects), absent ones marked ABSENT, so all of
its states share one node numbering. A state with any other atom (possible only
for states not reached by the task's operators) extends the graph, which drops
that task's cached states.
"""

from __future__ import annotations

import collections
import sys
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import Task, atom_arguments, atom_predicate

UNSEEN = -1  # wlplan's colour for keys outside the vocabulary
ABSENT = -2  # the node is not in this state's graph
_T_POS_GOAL, _F_POS_GOAL, _NON_GOAL, _DESCRIPTIONS = 0, 1, 4, 5  # wlplan's ILGFactDescription
_CACHE_BYTES = 256 << 20  # node colours and histograms kept for later states to start from
DERIVE_NODES = 1 << 20  # node colours (over all layers) of the dense rows read by the states derived together
_ROW_OVERHEAD = 256  # bytes of Python objects per cached state, besides its arrays and its atom set
_DENSE_SHARE = 4  # a derived state keeps a dense row of its own where it changed 1/4 of its start's
_COPY_COLOURS = 1 << 16  # up to this many node colours in a derivation, every state gets a dense row of its own
# From this many atoms per object (each graph's mean, summed over the states derived together), in a derivation
# of at least `_NEAR_STATES` states, objects are refined from only the atoms their states' graphs can hold; below,
# listing those costs more than reading all.
_NEAR_READS = 512
_NEAR_STATES = 16
_SHARED_READS = 4  # see `FastWL._shared_starts`


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _segment_bounds(segment: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Lengths and start offsets of the runs of a sorted array of segment ids 0..n-1."""
    lengths = np.bincount(segment, minlength=n)
    return lengths, np.cumsum(lengths) - lengths


def _ramp(lengths: np.ndarray) -> np.ndarray:
    """0..l-1 for every l in `lengths`, concatenated."""
    total = int(lengths.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)


class _Layer:
    """One refinement layer's colour hash as arrays: keys hashed, sorted by hash, with their exact codes."""

    def __init__(self, keys: dict[tuple[int, ...], int], code_base: int):
        self.code_base = code_base
        own, segment, codes, ids = [], [], [], []
        for i, (key, colour) in enumerate(keys.items()):
            own.append(key[-1])
            ids.append(colour)
            entry = sorted(
                label * code_base + c + 1 for label, c, count in zip(*[iter(key[:-1])] * 3) for _ in range(count)
            )
            codes += entry
            segment += [i] * len(entry)
        own_a, segment_a = np.asarray(own, np.int64), np.asarray(segment, np.int64)
        codes_a = np.asarray(codes, np.int64)
        for salt in range(1, 1 << 16):  # a salt under which no two keys of the layer share a hash
            hashes = _hash(own_a, segment_a, codes_a, np.uint64(salt))
            if len(np.unique(hashes)) == len(hashes):
                break
        else:  # pragma: no cover  # 64-bit hashes of a few thousand keys
            raise AssertionError("no collision-free salt for the WL vocabulary")
        self.salt = np.uint64(salt)
        order = np.argsort(hashes)
        lengths, starts = _segment_bounds(segment_a, len(own))
        self.hashes = hashes[order]
        self.ids = np.asarray(ids, np.int64)[order]
        self.own = own_a[order]
        self.lengths, self.starts = lengths[order], starts[order]
        self.codes = codes_a

    def lookup(self, own: np.ndarray, segment: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Colour ids (UNSEEN where absent) of the keys (own[i], sorted codes of segment i)."""
        n = len(own)
        hashes = _hash(own, segment, codes, self.salt)
        if not len(self.hashes):
            return np.full(n, UNSEEN, np.int64)
        slot = np.minimum(np.searchsorted(self.hashes, hashes), len(self.hashes) - 1)
        lengths, starts = _segment_bounds(segment, n)
        hit = (self.hashes[slot] == hashes) & (self.own[slot] == own) & (self.lengths[slot] == lengths)
        entries = np.flatnonzero(hit[segment])  # the codes of keys that hit: compare them one by one
        if len(entries):
            key = segment[entries]
            expected = self.codes[self.starts[slot[key]] + entries - starts[key]]
            hit[key[expected != codes[entries]]] = False
        return np.where(hit, self.ids[slot], UNSEEN)


def _hash(own: np.ndarray, segment: np.ndarray, codes: np.ndarray, salt: np.uint64) -> np.ndarray:
    """One uint64 per key: its mixed own colour plus the (order-free) sum of its mixed codes."""
    mixed = _mix(codes.astype(np.uint64) + salt)
    totals = np.zeros(len(mixed) + 1, np.uint64)
    np.cumsum(mixed, out=totals[1:])
    lengths, starts = _segment_bounds(segment, len(own))
    return _mix(totals[starts + lengths] - totals[starts] + _mix(own.astype(np.uint64) ^ salt))


class Vocabulary:
    """A wlplan WL feature generator's colour hash: layer 0 as a dict, layers 1.. as hashed arrays."""

    def __init__(self, iterations: int, multiset: bool, predicates: Sequence[tuple[str, int]], layers: Sequence[dict]):
        self.iterations = iterations
        self.multiset = multiset
        self.predicates = {name: (index, arity) for index, (name, arity) in enumerate(predicates)}
        self.layers = tuple(layers)
        self.dim = sum(len(layer) for layer in layers)
        # A neighbour's (label, colour) as one code; colour + 1 >= 0 even for UNSEEN, and codes of
        # different labels never meet. Codes of one key are offset by `span` per key when sorted.
        self.code_base = self.dim + 2
        self.span = max([arity for _, arity in predicates] + [1]) * self.code_base
        self.tables = [_Layer(layer, self.code_base) for layer in layers[1:]]

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


class _Batch:
    """The states derived in one call: their histograms and counts, and their node colours, each row's as
    a dense row (layer j, node v at j * size + v) and the entries where the row differs from it. A row whose
    entries would be many holds its dense row itself (in `dense`); the others name another batch's
    (`root`, `root_offset`), so a child costs the nodes near its changes, not a copy of the whole graph.
    A state's cache entry is (batch, row). An evicted batch drops its dense rows (`alive` False): rows of
    other batches that name them can no longer be started from."""

    __slots__ = (
        "__weakref__",
        "alive",
        "dense",
        "graphs",
        "hist",
        "nbytes",
        "nodes",
        "overlay_bounds",
        "overlay_colours",
        "overlay_positions",
        "root_offset",
        "roots",
        "states",
        "unseen",
    )

    def __init__(self, graphs, states, hist, unseen, nodes, dense, root, root_offset, overlay):
        self.graphs: list[TaskGraph] = graphs
        self.states: list[frozenset[str]] = states
        self.hist: np.ndarray = hist
        self.unseen: np.ndarray = unseen  # unseen colour occurrences over all layers
        self.nodes: np.ndarray = nodes  # ILG nodes
        self.dense: np.ndarray = dense
        # Weak: an evicted batch goes at once, and rows that named its dense rows cannot start (`startable`).
        self.roots: list[weakref.ref | None] = [None if batch is None else weakref.ref(batch) for batch in root]
        self.root_offset: list[int] = root_offset
        positions, colours, bounds = overlay  # row i's entries: [bounds[i], bounds[i + 1])
        self.overlay_positions: np.ndarray = positions  # row-local (j * size + v), ascending per row
        self.overlay_colours: np.ndarray = colours
        self.overlay_bounds: list[int] = bounds.tolist()
        self.alive = True
        arrays = dense.nbytes + positions.nbytes + colours.nbytes + hist.nbytes
        self.nbytes = arrays + sum(map(sys.getsizeof, states)) + _ROW_OVERHEAD * len(states)  # the cache keeps them

    def root(self, row: int) -> _Batch | None:
        """The batch that holds the row's dense row (None: evicted)."""
        ref = self.roots[row]
        return self if ref is None else ref()

    def startable(self, row: int) -> bool:
        """Whether the row's colours are still all here (its dense row not evicted)."""
        root = self.root(row)
        return root is not None and root.alive


Entry = tuple[_Batch, int]


class TaskGraph:
    """The ILG of one task over every atom its states can hold; node ids: objects first, then atoms."""

    def __init__(self, task: Task, vocabulary: Vocabulary):
        self.task = task
        self.vocabulary = vocabulary
        self.objects = len(task.objects)
        self.node: dict[str, int] = {obj: i for i, obj in enumerate(task.objects)}
        self._args: list[tuple[int, ...]] = [()] * len(task.objects)  # atom node -> argument object nodes
        object_colour = vocabulary.layers[0].get(0, UNSEEN)
        self._present0 = [object_colour] * len(task.objects)  # layer-0 colour if the node is in the graph
        self._absent0 = [object_colour] * len(task.objects)  # ... and if it is not (goal atoms are always in it)
        self._none0 = [object_colour] * len(task.objects)  # ... in the state with no fluent atom
        self.records: dict[frozenset[str], Entry] = {}  # cached states
        self.base: Entry | None = None  # the state with no fluent atom
        self.last: Entry | None = None  # the state derived last
        self.node_base = -1  # where the engine's tables hold this graph's nodes
        reachable = task.init | task.goal | task.static | {atom for op in task.operators for atom in op.add}
        self.extend(reachable)

    def extend(self, atoms: Iterable[str]) -> None:
        """Add atoms (checked against the domain and the objects) as nodes; drops the cached states."""
        for text in sorted(set(atoms) - self.node.keys()):
            self._add_atom(text)
        size = len(self._args)
        arity = np.asarray([len(args) for args in self._args], np.int64)
        atom = np.repeat(np.arange(size), arity)
        argument = np.asarray([obj for args in self._args for obj in args], np.int64)
        label = _ramp(arity)
        source = np.concatenate([atom, argument])  # edges both ways, labelled with the argument position
        order = np.argsort(source, kind="stable")
        self.size = size
        self.degree = np.bincount(source, minlength=size)
        self.object_degree = float(self.degree[: self.objects].mean()) if self.objects else 0.0
        self.neighbour = np.concatenate([argument, atom])[order]
        self.label = np.concatenate([label, label])[order]
        self.present0 = np.asarray(self._present0, np.int64)
        self.absent0 = np.asarray(self._absent0, np.int64)
        self.none0 = np.asarray(self._none0, np.int64)
        self.records, self.base, self.last = {}, None, None
        self.node_base = -1

    def _add_atom(self, atom: str) -> None:
        name, args = atom_predicate(atom), atom_arguments(atom)
        index, arity = self.vocabulary.predicates.get(name, (None, None))
        where = self.task.problem_file
        if index is None or arity != len(args):
            raise InputError(where, f"a state does not fit the problem: {atom} is not an atom of the domain")
        objects = len(self.task.objects)
        missing = [a for a in args if self.node.get(a, objects) >= objects]
        if missing:
            raise InputError(where, f"a state does not fit the problem: {atom} names unknown object '{missing[0]}'")
        self.node[atom] = len(self._args)
        self._args.append(tuple(self.node[a] for a in args))
        layer0 = self.vocabulary.layers[0]
        goal = atom in self.task.goal
        present = layer0.get(1 + index * _DESCRIPTIONS + (_T_POS_GOAL if goal else _NON_GOAL), UNSEEN)
        absent = layer0.get(1 + index * _DESCRIPTIONS + _F_POS_GOAL, UNSEEN) if goal else ABSENT
        self._present0.append(present)
        self._absent0.append(absent)
        self._none0.append(present if atom in self.task.static else absent)


class _Growing:
    """An append-only NumPy array (amortised doubling)."""

    def __init__(self) -> None:
        self._data = np.zeros(1024, np.int64)
        self.size = 0

    def append(self, values: np.ndarray) -> int:
        offset, end = self.size, self.size + len(values)
        if end > len(self._data):
            grown = np.zeros(max(end, 2 * len(self._data)), np.int64)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[offset:end] = values
        self.size = end
        return offset

    @property
    def array(self) -> np.ndarray:
        return self._data[: self.size]


def _by_batch(entries: Sequence[Entry]) -> list[tuple[_Batch, list[int], list[int]]]:
    """Entries grouped by batch: (batch, positions in `entries`, rows of the batch)."""
    groups: dict[int, tuple[_Batch, list[int], list[int]]] = {}
    for i, (batch, row) in enumerate(entries):
        group = groups.get(id(batch))
        if group is None:
            group = groups[id(batch)] = (batch, [], [])
        group[1].append(i)
        group[2].append(row)
    return list(groups.values())


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    values = np.sort(values)
    keep = np.ones(len(values), bool)
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


class _Around:
    """Atom neighbours of objects, as (atom, label) entries grouped by (owner, object); an owner (a start's
    dense row, or a derived state) has `objects[owner]` objects."""

    def __init__(self, objects: np.ndarray, owner: np.ndarray, obj: np.ndarray, atom: np.ndarray, label: np.ndarray):
        self.key_base = np.cumsum(objects) - objects
        keys = self.key_base[owner] + obj
        order = np.argsort(keys, kind="stable")
        self.atoms, self.labels = atom[order], label[order]
        self.counts, self.starts = _segment_bounds(keys[order], int(objects.sum()))

    def count(self, owners: np.ndarray, objects: np.ndarray) -> np.ndarray:
        """How many entries each (owner, object) has."""
        return self.counts[self.key_base[owners] + objects]

    def entries(self, owners: np.ndarray, objects: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Entries per (owner, object): their counts, atoms and labels."""
        keys = self.key_base[owners] + objects
        counts = self.counts[keys]
        at = np.repeat(self.starts[keys], counts) + _ramp(counts)
        return counts, self.atoms[at], self.labels[at]


class _Near(NamedTuple):
    """The atoms that can be in a derived row's graph around its objects: its start's (`starts`, owner
    `which[row]`) and those it adds (`added`, owner the row)."""

    which: np.ndarray
    starts: _Around
    added: _Around


class _Nodes(NamedTuple):
    """Nodes of the rows being derived: row, node, and virtual layer-0 position (ascending)."""

    r: np.ndarray
    v: np.ndarray
    virtual: np.ndarray


class _Moved(NamedTuple):
    """The neighbours whose colour changed at the layer below, one entry per edge to a node (`target`,
    virtual): the edge's label times the code base, and the neighbour's old and new colours."""

    target: np.ndarray
    label_code: np.ndarray
    old: np.ndarray
    new: np.ndarray


class _Colours:
    """The node colours of the states being derived together: row r's dense start row (at base[r] in `dense`),
    and per layer the entries that the derivation changed, sorted by virtual position (row r's node v at layer
    j is offset[r] + j * size[r] + v). `marked` (as long as `dense`, all False between derivations) flags the
    places in the start rows that some row changed: only reads there look for a change. Without `marked`,
    each row's dense row is its own copy, changed in place."""

    def __init__(
        self, dense: np.ndarray, base: np.ndarray, offset: np.ndarray, size: np.ndarray, marked: np.ndarray | None
    ):
        self.dense, self.base, self.offset, self.size, self.marked = dense, base, offset, size, marked
        self.changed: list[tuple[np.ndarray, np.ndarray]] = []  # per layer: (virtual positions, colours)
        self._flagged: list[np.ndarray] = []

    def read(self, j: int, r: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Layer-j colours (int64) of the nodes (r, v)."""
        local = j * self.size[r] + v
        at = self.base[r] + local
        colours = self.dense[at].astype(np.int64)
        if self.marked is not None and j < len(self.changed):
            maybe = np.flatnonzero(self.marked[at])
            if len(maybe):
                keys, values = self.changed[j]
                wanted = self.offset[r[maybe]] + local[maybe]
                slot = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
                hit = keys[slot] == wanted
                colours[maybe[hit]] = values[slot[hit]]
        return colours

    def change(self, j: int, r: np.ndarray, v: np.ndarray, colours: np.ndarray) -> None:
        """Layer j's changes (rows ascending, nodes ascending within a row), all at once."""
        assert j == len(self.changed)
        local = j * self.size[r] + v
        self.changed.append((self.offset[r] + local, colours))
        flagged = self.base[r] + local
        if self.marked is None:
            self.dense[flagged] = colours
            return
        self.marked[flagged] = True
        self._flagged.append(flagged)

    def release(self) -> None:
        """Clear `marked` for the next derivation."""
        for flagged in self._flagged:
            self.marked[flagged] = False  # type: ignore[index]  # flagged only with `marked`


class FastWL:
    """Embeds (TaskGraph, state) pairs in batches, keeping recent states' colours to start later states from."""

    def __init__(self, vocabulary: Vocabulary, cache_bytes: int = _CACHE_BYTES):
        self.vocabulary = vocabulary
        self._colour_type = np.int16 if vocabulary.dim < np.iinfo(np.int16).max else np.int32  # halves the copying
        self._cache_bytes = cache_bytes
        self._batches: collections.deque[_Batch] = collections.deque()  # cached, oldest first
        self._bytes = 0
        # Every graph's nodes, one graph after another (a graph's node v is node_base + v).
        self._first, self._degree = _Growing(), _Growing()  # node -> its (label, neighbour) entries
        self._present0, self._absent0 = _Growing(), _Growing()
        self._neighbour, self._label = _Growing(), _Growing()  # entries; neighbours as graph-local ids
        self._marked = np.zeros(0, bool)  # `_Colours.marked`, kept between derivations

    def graph(self, task: Task) -> TaskGraph:
        return TaskGraph(task, self.vocabulary)

    def embed(
        self,
        pairs: Sequence[tuple[TaskGraph, frozenset[str]]],
        parents: Sequence[frozenset[str] | None] | None = None,
    ) -> tuple[np.ndarray, int, int]:
        """float32 [n, dim] histograms, the unseen colour occurrences, and all colour occurrences.

        `parents[i]`, if given, is a state embedded before from which pair i's state
        differs by a few atoms (its parent in a search): the cheapest place to start from.
        """
        while True:
            entries = self._entries(pairs, parents)
            if isinstance(entries, list):
                break
            for graph, atoms in entries.items():  # atoms outside a graph: extend it, then start over
                graph.extend(atoms)
        out = np.zeros((len(pairs), self.vocabulary.dim), np.float32)
        unseen = nodes = 0
        for batch, rows, batch_rows in _by_batch(entries):
            out[rows] = batch.hist[batch_rows]
            unseen += int(batch.unseen[batch_rows].sum())
            nodes += int(batch.nodes[batch_rows].sum())
        return out, unseen, nodes * (self.vocabulary.iterations + 1)

    def _entries(self, pairs, parents) -> list[Entry] | dict[TaskGraph, set[str]]:
        """Every pair's cache entry, or the atoms that some graphs lack."""
        graphs = {id(graph): graph for graph, _ in pairs}.values()
        self._add_bases([graph for graph in graphs if graph.base is None])
        found: list[Entry | None] = [None] * len(pairs)
        new: dict[tuple[int, frozenset[str]], int] = {}  # (graph, state) -> index among the states to derive
        waiting: list[tuple[int, int]] = []  # (row, index among the states to derive)
        derive_graphs: list[TaskGraph] = []
        derive_states: list[frozenset[str]] = []
        starts: list[Entry] = []
        rows: list[int] = []  # layer-0 changes: index among the states to derive, node, atom came?
        nodes: list[int] = []
        came: list[bool] = []
        unknown: dict[TaskGraph, set[str]] = {}
        for row, (graph, state) in enumerate(pairs):
            entry = graph.records.get(state)
            if entry is not None:
                found[row] = entry
                continue
            key = (id(graph), state)
            index = new.get(key)
            if index is not None:
                waiting.append((row, index))
                continue
            start = None
            if parents is not None and parents[row] is not None:
                start = graph.records.get(parents[row])
            if start is None or not start[0].startable(start[1]):
                last = graph.last
                start = last if last is not None and last[0].startable(last[1]) else graph.base
            assert start is not None
            start_state = start[0].states[start[1]]
            added, removed = state - start_state, start_state - state
            if len(added) + len(removed) > len(state):
                start, added, removed = graph.base, state, frozenset()
            node = graph.node
            try:
                changed = [node[atom] for atom in added] + [node[atom] for atom in removed]
            except KeyError:
                unknown.setdefault(graph, set()).update(atom for atom in added if atom not in node)
                continue
            index = new[key] = len(starts)
            waiting.append((row, index))
            derive_graphs.append(graph)
            derive_states.append(state)
            starts.append(start)
            rows += [index] * len(changed)
            nodes += changed
            came += [True] * len(added) + [False] * len(removed)
        if unknown:
            return unknown
        derived: list[Entry] = []
        changes = np.asarray(rows, np.int64)
        for first, last in self._chunks(derive_graphs, starts):  # memory grows with the rows read
            lo, hi = np.searchsorted(changes, [first, last])
            batch = self._derive(
                derive_graphs[first:last],
                derive_states[first:last],
                starts[first:last],
                changes[lo:hi] - first,
                nodes[lo:hi],
                came[lo:hi],
            )
            for index, (graph, state) in enumerate(zip(batch.graphs, batch.states)):
                graph.records[state] = graph.last = (batch, index)
                derived.append((batch, index))
            self._batches.append(batch)
            self._bytes += batch.nbytes
        for row, index in waiting:
            found[row] = derived[index]
        self._evict()
        return found  # type: ignore[return-value]  # every row was filled

    def _chunks(self, graphs: list[TaskGraph], starts: list[Entry]) -> Iterator[tuple[int, int]]:
        """Consecutive ranges of the states to derive, each reading dense rows of at most `DERIVE_NODES` node
        colours (at least one state): a task with hundreds of thousands of atoms takes megabytes per row.
        States next to each other with the same start read one row (copies per state are few: `_COPY_COLOURS`)."""
        first, total, previous = 0, 0, None
        for index, (graph, start) in enumerate(zip(graphs, starts)):
            if start == previous:
                continue
            previous, width = start, graph.size * (self.vocabulary.iterations + 1)
            if total + width > DERIVE_NODES and index > first:
                yield first, index
                first, total = index, 0
            total += width
        if first < len(graphs):
            yield first, len(graphs)

    def _evict(self) -> None:
        while self._bytes > self._cache_bytes and len(self._batches) > 1:
            batch = self._batches.popleft()
            self._bytes -= batch.nbytes
            batch.alive, batch.dense = False, np.zeros(0, batch.dense.dtype)
            for graph, state in zip(batch.graphs, batch.states):
                entry = graph.records.get(state)
                if entry is not None and entry[0] is batch:
                    del graph.records[state]

    def _register(self, graph: TaskGraph) -> None:
        """Append the graph's node and entry tables to the engine's."""
        entries = self._neighbour.append(graph.neighbour)
        self._label.append(graph.label)
        graph.node_base = self._degree.append(graph.degree)
        self._first.append(entries + np.cumsum(graph.degree) - graph.degree)
        self._present0.append(graph.present0)
        self._absent0.append(graph.absent0)

    def _add_bases(self, graphs: list[TaskGraph]) -> None:
        """The state with no fluent atom, per graph: derived from an empty graph (every node ABSENT)."""
        if not graphs:
            return
        for graph in graphs:
            self._register(graph)
        count = len(graphs)
        size = np.asarray([graph.size for graph in graphs], np.int64)
        width = size * (self.vocabulary.iterations + 1)
        none: list[frozenset[str]] = [frozenset()] * count
        empty = _Batch(
            graphs,
            none,
            np.zeros((count, self.vocabulary.dim), np.float32),
            np.zeros(count, np.int64),
            np.zeros(count, np.int64),
            np.full(int(width.sum()), ABSENT, self._colour_type),
            [None] * count,
            (np.cumsum(width) - width).tolist(),
            (np.zeros(0, np.int32), np.zeros(0, self._colour_type), np.zeros(count + 1, np.int64)),
        )
        rows = np.repeat(np.arange(count), size)
        nodes = _ramp(size)
        colours = np.concatenate([graph.none0 for graph in graphs])
        bases = self._derive(graphs, none, [(empty, i) for i in range(count)], rows, nodes, colours=colours)
        for index, graph in enumerate(graphs):
            graph.base = (bases, index)

    def _derive(
        self,
        graphs: list[TaskGraph],
        states: list[frozenset[str]],
        starts: Sequence[Entry],
        rows,
        nodes,
        came=None,
        colours=None,
    ) -> _Batch:
        """The states whose layer-0 colours are the starts' with changes at (row, node) applied.

        A change's colour is `colours`, or the node's colour when present (`came`) or absent.
        Layer j changes only at nodes whose own or a neighbour's layer j-1 colour changed,
        so only those are recoloured. All rows go together, their colours read and written
        through one `_Colours` (the starts' dense rows, and the changes).
        """
        vocabulary, count = self.vocabulary, len(graphs)
        bases = colours is not None  # dense rows of their own (the empty graph they start from goes)
        size = np.asarray([graph.size for graph in graphs], np.int64)
        width = size * (vocabulary.iterations + 1)
        offset = np.cumsum(width) - width
        node_base = np.asarray([graph.node_base for graph in graphs], np.int64)
        objects = np.asarray([graph.objects for graph in graphs], np.int64)
        view, roots, dense = self._start_colours(starts, size, width, offset)
        hist = np.empty((count, vocabulary.dim), np.float32)
        unseen, present = np.empty(count, np.int64), np.empty(count, np.int64)
        for batch, rows_here, batch_rows in _by_batch(starts):
            hist[rows_here] = batch.hist[batch_rows]
            unseen[rows_here] = batch.unseen[batch_rows]
            present[rows_here] = batch.nodes[batch_rows]

        r, v = np.asarray(rows, np.int64), np.asarray(nodes, np.int64)
        if colours is None:
            where = node_base[r] + v
            colours = np.where(np.asarray(came, bool), self._present0.array[where], self._absent0.array[where])
        order = np.argsort(offset[r] + v, kind="stable")
        r, v, colours = r[order], v[order], np.asarray(colours, np.int64)[order]
        old = view.read(0, r, v)
        keep = colours != old
        r, v, new, old = r[keep], v[keep], colours[keep], old[keep]
        near = None  # few atoms per object: reading them all costs less than listing those in the graph
        if count >= _NEAR_STATES and sum(graph.object_degree for graph in graphs) >= _NEAR_READS:
            near = self._present_atoms(view, starts, objects, node_base, size, r, v, old, new)
        view.change(0, r, v, new)
        present += np.bincount(r[old == ABSENT], minlength=count) - np.bincount(r[new == ABSENT], minlength=count)
        changes = [(r, old, new)]

        from_starts = view.marked is not None and not vocabulary.multiset  # keys may come from the starts' keys
        for j in range(1, vocabulary.iterations + 1):
            index, around, label = self._neighbours(near, node_base, objects, r, v)
            target = offset[r[index]] + around  # virtual, layer 0
            moved = _Moved(target, label * vocabulary.code_base, old[index], new[index]) if from_starts else None
            keys = _sorted_unique(np.concatenate([offset[r] + v, target]))
            r = np.searchsorted(offset, keys, side="right") - 1
            v = keys - offset[r]
            own = view.read(j - 1, r, v)
            new = own.copy()  # absent stays absent, unseen stays unseen
            refine = np.flatnonzero(own >= 0)
            if len(refine):
                nodes = _Nodes(r[refine], v[refine], keys[refine])
                new[refine] = self._refine(j, view, near, node_base, objects, nodes, own[refine], moved)
            old = view.read(j, r, v)
            keep = new != old
            r, v, new, old = r[keep], v[keep], new[keep], old[keep]
            view.change(j, r, v, new)
            changes.append((r, old, new))

        r, old, new = (np.concatenate(parts) for parts in zip(*changes))
        came_in, went = new >= 0, old >= 0
        flat = np.concatenate([r[came_in] * vocabulary.dim + new[came_in], r[went] * vocabulary.dim + old[went]])
        weights = np.concatenate([np.ones(came_in.sum()), -np.ones(went.sum())])
        hist += np.bincount(flat, weights, minlength=count * vocabulary.dim).reshape(count, vocabulary.dim)
        unseen += np.bincount(r[new == UNSEEN], minlength=count) - np.bincount(r[old == UNSEEN], minlength=count)
        view.release()
        return self._stored(graphs, states, view, roots, dense, width, hist, unseen, present, bases)

    def _start_colours(
        self, starts: Sequence[Entry], size: np.ndarray, width: np.ndarray, offset: np.ndarray
    ) -> tuple[_Colours, list[tuple[_Batch | None, int]], np.ndarray]:
        """The starts' colours as one `_Colours`, the dense row each derived state will name (batch and offset;
        None: the new batch), and the new batch's dense rows so far. Up to `_COPY_COLOURS` colours, each state
        gets a copy of its start's colours. Otherwise a start with entries of its own gets a dense row there,
        made once for all of its children: a child then keeps only its own changes."""
        if int(width.sum()) <= _COPY_COLOURS:
            copies = []
            for (batch, row), w in zip(starts, width.tolist()):
                at, lo, hi = batch.root_offset[row], batch.overlay_bounds[row], batch.overlay_bounds[row + 1]
                copy = batch.root(row).dense[at : at + w]  # type: ignore[union-attr]  # startable
                if hi > lo:
                    copy = copy.copy()
                    copy[batch.overlay_positions[lo:hi]] = batch.overlay_colours[lo:hi]
                copies.append(copy)
            own = np.concatenate(copies)
            return _Colours(own, offset, offset, size, None), [(None, at) for at in offset.tolist()], own
        roots: list[tuple[_Batch | None, int]] = []
        made: dict[tuple[int, int], int] = {}  # (start batch, row) -> offset of its dense row in the new batch
        pieces: list[np.ndarray] = []
        total = 0
        for (batch, row), w in zip(starts, width.tolist()):
            lo, hi = batch.overlay_bounds[row], batch.overlay_bounds[row + 1]
            if hi == lo:
                roots.append((batch.root(row), batch.root_offset[row]))
                continue
            key = (id(batch), row)
            if key not in made:
                at = batch.root_offset[row]
                piece = batch.root(row).dense[at : at + w].copy()  # type: ignore[union-attr]  # startable
                piece[batch.overlay_positions[lo:hi]] = batch.overlay_colours[lo:hi]
                made[key] = total
                pieces.append(piece)
                total += w
            roots.append((None, made[key]))
        dense = np.concatenate(pieces) if pieces else np.zeros(0, self._colour_type)
        arrays = {id(root): root.dense for root, _ in roots if root is not None}
        read, copied = dense, {}
        if len(arrays) == 1 and not pieces:
            read = next(iter(arrays.values()))
        elif arrays:  # dense rows in several arrays (rare): read from copies of them, after the new batch's
            extra, end = [dense], total
            for (root, at), w in zip(roots, width.tolist()):
                if root is not None and (id(root), at) not in copied:
                    copied[(id(root), at)] = end
                    extra.append(root.dense[at : at + w])
                    end += w
            read = np.concatenate(extra)
        base = np.asarray([at if root is None or not copied else copied[(id(root), at)] for root, at in roots])
        if len(self._marked) < len(read):
            self._marked = np.zeros(max(len(read), 2 * len(self._marked)), bool)
        return _Colours(read, base, offset, size, self._marked), roots, dense

    def _stored(self, graphs, states, view: _Colours, roots, dense, width, hist, unseen, present, own_rows) -> _Batch:
        """The derived states as a batch: each row's changes from the dense row it names, or, where they are
        many (or `own_rows`), a dense row of its own (after the starts' dense rows made for this batch)."""
        count = len(graphs)
        if view.marked is None:  # every row has its own dense row
            empty = (np.zeros(0, np.int32), np.zeros(0, self._colour_type), np.zeros(count + 1, np.int64))
            return _Batch(graphs, states, hist, unseen, present, dense, [None] * count, [at for _, at in roots], empty)
        keys = np.concatenate([changed[0] for changed in view.changed])
        values = np.concatenate([changed[1] for changed in view.changed])
        order = np.argsort(keys)
        keys, values = keys[order], values[order]
        r = np.searchsorted(view.offset, keys, side="right") - 1
        local = keys - view.offset[r]
        own = (np.bincount(r, minlength=count) * _DENSE_SHARE > width) | own_rows
        root: list[_Batch | None] = [batch for batch, _ in roots]
        root_offset = [at for _, at in roots]
        pieces, total = [dense], len(dense)
        for i in np.flatnonzero(own).tolist():
            pieces.append(view.dense[view.base[i] : view.base[i] + width[i]])
            root[i], root_offset[i] = None, total
            total += int(width[i])
        if len(pieces) > 1:
            dense = np.concatenate(pieces)
            mine = own[r]
            dense[np.asarray(root_offset, np.int64)[r[mine]] + local[mine]] = values[mine]
            r, local, values = r[~mine], local[~mine], values[~mine]
        bounds = np.zeros(count + 1, np.int64)
        np.cumsum(np.bincount(r, minlength=count), out=bounds[1:])
        overlay = (local.astype(np.int32), values.astype(self._colour_type), bounds)
        return _Batch(graphs, states, hist, unseen, present, dense, root, root_offset, overlay)

    def _refine(
        self, j: int, view: _Colours, near: _Near | None, node_base, objects, nodes: _Nodes, own, moved: _Moved | None
    ) -> np.ndarray:
        """Layer-j colours of `nodes` whose layer j-1 colour `own` is a colour (not absent or unseen); `moved`,
        where keys may be made from the starts' keys (`_changed_keys`).

        A key is sorted as wlplan sorts it, as codes label * code_base + colour + 1 offset
        by span per key. A neighbour's UNSEEN colour gives a code that no vocabulary key has.
        """
        vocabulary = self.vocabulary
        shared = None if moved is None else self._shared_starts(j, view, near, node_base, objects, nodes, moved)
        if moved is None or shared is None:
            index, around, label = self._neighbours(near, node_base, objects, nodes.r, nodes.v)
            colour = view.read(j - 1, nodes.r[index], around)
            there = colour != ABSENT
            packed = index[there] * vocabulary.span + label[there] * vocabulary.code_base + colour[there] + 1
            packed = np.sort(packed) if vocabulary.multiset else _sorted_unique(packed)
        else:
            packed = self._changed_keys(j, view, near, node_base, objects, nodes, moved, *shared)
        key = packed // vocabulary.span
        return vocabulary.tables[j - 1].lookup(own, key, packed - key * vocabulary.span)

    def _shared_starts(
        self, j: int, view: _Colours, near: _Near | None, node_base, objects, nodes: _Nodes, moved: _Moved
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """For `_changed_keys`, the nodes' first of each (start, node) pair and each node's pair, where
        reading the pairs' neighbours once and the changed ones per node reads `_SHARED_READS` times fewer
        colours than reading every node's neighbours; else None."""
        degree = self._degrees(near, node_base, objects, nodes.r, nodes.v)
        reads = int(degree.sum())
        if reads < _SHARED_READS * len(moved.target):
            return None
        start_at = view.base[nodes.r] + (j - 1) * view.size[nodes.r] + nodes.v  # in the starts' dense rows
        _, first, pair = np.unique(start_at, return_index=True, return_inverse=True)
        if reads < _SHARED_READS * (int(degree[first].sum()) + len(moved.target)):
            return None
        return first, pair

    def _changed_keys(
        self,
        j: int,
        view: _Colours,
        near: _Near | None,
        node_base,
        objects,
        nodes: _Nodes,
        moved: _Moved,
        first: np.ndarray,
        pair: np.ndarray,
    ) -> np.ndarray:
        """The nodes' layer-j keys (packed codes, sorted, without repeats) as their starts' keys with the
        codes of the neighbours that changed at layer j-1 taken out and put in. A start's key is read once
        for all the rows derived from it: a child of a Miconic state reads the two floors' `above` atoms
        that changed, not all of every floor's."""
        vocabulary = self.vocabulary
        span, code_base = vocabulary.span, vocabulary.code_base
        r, v = nodes.r[first], nodes.v[first]
        index, around, label = self._neighbours(near, node_base, objects, r, v)
        colour = view.dense[view.base[r[index]] + (j - 1) * view.size[r[index]] + around].astype(np.int64)
        there = colour != ABSENT
        packed, counts = np.unique(
            index[there] * span + label[there] * code_base + colour[there] + 1, return_counts=True
        )
        owner = packed // span
        codes = packed - owner * span
        lengths, starts = _segment_bounds(owner, len(first))
        inherited = lengths[pair]
        node = np.repeat(np.arange(len(pair)), inherited)
        taken = np.repeat(starts[pair], inherited) + _ramp(inherited)

        slot = np.minimum(np.searchsorted(nodes.virtual, moved.target), len(nodes.virtual) - 1)
        here = nodes.virtual[slot] == moved.target
        went, came = here & (moved.old != ABSENT), here & (moved.new != ABSENT)
        inherited_keys = node * span + codes[taken]  # ascending
        moves = np.concatenate(
            [
                slot[went] * span + moved.label_code[went] + moved.old[went] + 1,
                slot[came] * span + moved.label_code[came] + moved.new[came] + 1,
            ]
        )
        steps = np.concatenate([-np.ones(int(went.sum()), np.int64), np.ones(int(came.sum()), np.int64)])
        at = np.minimum(np.searchsorted(inherited_keys, moves), max(len(inherited_keys) - 1, 0))
        known = inherited_keys[at] == moves if len(inherited_keys) else np.zeros(len(moves), bool)
        left = counts[taken] + np.bincount(at[known], steps[known], minlength=len(inherited_keys))
        fresh = _sorted_unique(moves[~known])  # codes no start's key had: only ever put in
        return np.sort(np.concatenate([inherited_keys[left > 0], fresh]), kind="stable")

    def _edges(self, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (label, neighbour) entries of the engine's nodes `where`: their counts, and the entries."""
        counts = self._degree.array[where]
        return counts, np.repeat(self._first.array[where], counts) + _ramp(counts)

    def _present_atoms(
        self, view: _Colours, starts: Sequence[Entry], objects, node_base, size, r, v, old, new
    ) -> _Near:
        """Per start (read before the layer-0 changes r, v, old -> new), the atoms in its graph around each
        object, and per derived row the atoms it adds: the only atom neighbours a row's object can have
        in its graph (an atom it removes is listed, and reads ABSENT)."""
        seen: dict[tuple[int, int], int] = {}  # rows with one start share its atoms (even as copies of them)
        which = np.asarray([seen.setdefault((id(batch), row), len(seen)) for batch, row in starts], np.int64)
        first = np.unique(which, return_index=True)[1]
        bases = view.base[first]
        atoms = size[first] - objects[first]
        ends = np.cumsum(atoms)
        layer0 = np.repeat(bases + objects[first] - (ends - atoms), atoms) + np.arange(int(ends[-1]))
        present = np.flatnonzero(view.dense[layer0] != ABSENT)
        start = np.searchsorted(ends, present, side="right")
        atom = present - (ends - atoms)[start] + objects[first][start]
        added = (old == ABSENT) & (new != ABSENT) & (v >= objects[r])
        return _Near(
            which,
            self._around(objects[first], node_base[first], start, atom),
            self._around(objects, node_base, r[added], v[added]),
        )

    def _around(self, objects: np.ndarray, node_base: np.ndarray, owner: np.ndarray, atom: np.ndarray) -> _Around:
        """The atoms (owner, atom) as entries of their arguments."""
        counts, entries = self._edges(node_base[owner] + atom)
        return _Around(
            objects,
            np.repeat(owner, counts),
            self._neighbour.array[entries],
            np.repeat(atom, counts),
            self._label.array[entries],
        )

    def _degrees(self, near: _Near | None, node_base, objects, r, v) -> np.ndarray:
        """How many neighbours `_neighbours` lists for each of the nodes (r, v)."""
        degree = self._degree.array[node_base[r] + v]
        if near is not None:
            at_object = np.flatnonzero(v < objects[r])
            rows, nodes = r[at_object], v[at_object]
            degree[at_object] = near.starts.count(near.which[rows], nodes) + near.added.count(rows, nodes)
        return degree

    def _neighbours(self, near: _Near | None, node_base, objects, r, v) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The neighbours that the nodes (r, v) can have in their rows' graphs, as (position in r, neighbour,
        label): all of an atom's (objects), and of an object's atoms those `near` lists (on Blocks, an object
        has about 2n `on` atoms, nearly all absent); all of an object's without `near`."""
        if near is None:
            counts, entries = self._edges(node_base[r] + v)
            return np.repeat(np.arange(len(r)), counts), self._neighbour.array[entries], self._label.array[entries]
        is_atom = v >= objects[r]
        at_atom, at_object = np.flatnonzero(is_atom), np.flatnonzero(~is_atom)
        counts, entries = self._edges(node_base[r[at_atom]] + v[at_atom])
        rows, nodes = r[at_object], v[at_object]
        from_start = near.starts.entries(near.which[rows], nodes)
        added = near.added.entries(rows, nodes)
        return (
            np.concatenate(
                [np.repeat(at_atom, counts), np.repeat(at_object, from_start[0]), np.repeat(at_object, added[0])]
            ),
            np.concatenate([self._neighbour.array[entries], from_start[1], added[1]]),
            np.concatenate([self._label.array[entries], from_start[2], added[2]]),
        )
