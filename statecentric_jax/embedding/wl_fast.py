"""wlplan's WL colour histograms of ILGs for batches of states, refined incrementally in NumPy.

Decoding embeds every successor of every beam state: many states of many tasks,
each a few atoms away from its parent, embedded one call before. wlplan rebuilds
and recolours the whole graph per state (~850 nodes on large VisitAll problems,
mostly static atoms). Here a state starts from the node colours of a cached
state (its parent when the caller names it, else the task's last embedded state
or the state with no fluent atom), and only nodes within `iterations` hops of
the changed atoms are recoloured; its histogram is the start's plus the
difference. One call does this for the whole batch at once, with array
operations over (state, node) pairs: neighbour colours are gathered from one
concatenated colour buffer, each node's key is hashed (a sum of mixed
(label, colour) codes, so no per-node sorting is needed for the lookup), looked
up with `searchsorted` among the vocabulary's hashed keys, and then compared
element by element with the vocabulary key it hit, so a hash collision can
never give a wrong colour.

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
from collections.abc import Iterable, Sequence

import numpy as np

from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import Task, atom_arguments, atom_predicate

UNSEEN = -1  # wlplan's colour for keys outside the vocabulary
ABSENT = -2  # the node is not in this state's graph
_T_POS_GOAL, _F_POS_GOAL, _NON_GOAL, _DESCRIPTIONS = 0, 1, 4, 5  # wlplan's ILGFactDescription
_CACHE_BYTES = 256 << 20  # node colours and histograms kept for later states to start from
_RECORD_OVERHEAD = 256  # bytes of Python objects per cached state, besides its arrays


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


class _Record:
    """One embedded state: its node colours (layer-major, [layers x nodes] flattened), histogram and counts."""

    __slots__ = ("colours", "graph", "hist", "nbytes", "nodes", "state", "unseen", "version")

    def __init__(self, graph: TaskGraph, state: frozenset[str], colours: np.ndarray, hist: np.ndarray, unseen, nodes):
        self.graph, self.version, self.state = graph, graph.version, state
        self.colours, self.hist = colours, hist
        self.unseen = int(unseen)  # unseen colour occurrences over all layers
        self.nodes = int(nodes)  # ILG nodes
        self.nbytes = colours.nbytes + hist.nbytes + _RECORD_OVERHEAD


class TaskGraph:
    """The ILG of one task over every atom its states can hold; node ids: objects first, then atoms."""

    def __init__(self, task: Task, vocabulary: Vocabulary):
        self.task = task
        self.vocabulary = vocabulary
        self.node: dict[str, int] = {obj: i for i, obj in enumerate(task.objects)}
        self._args: list[tuple[int, ...]] = [()] * len(task.objects)  # atom node -> argument object nodes
        object_colour = vocabulary.layers[0].get(0, UNSEEN)
        self._present0 = [object_colour] * len(task.objects)  # layer-0 colour if the node is in the graph
        self._absent0 = [object_colour] * len(task.objects)  # ... and if it is not (goal atoms are always in it)
        self._none0 = [object_colour] * len(task.objects)  # ... in the state with no fluent atom
        self.version = 0  # bumped when atoms are added: cached states of older versions are dropped
        self.records: dict[frozenset[str], _Record] = {}  # cached states of this version
        self.base: _Record | None = None  # the state with no fluent atom
        self.last: _Record | None = None  # the state embedded last
        self.node_base = -1  # where the engine's tables hold this version's nodes
        reachable = task.init | task.goal | task.static | {atom for op in task.operators for atom in op.add}
        self.extend(reachable)

    def extend(self, atoms: Iterable[str]) -> None:
        """Add atoms (checked against the domain and the objects) as nodes, and rebuild the graph's arrays."""
        for atom in sorted(set(atoms) - self.node.keys()):
            self._add_atom(atom)
        size = len(self._args)
        incident: list[list[tuple[int, int]]] = [[] for _ in range(size)]  # node -> (label, neighbour)
        for v, args in enumerate(self._args):
            for label, obj in enumerate(args):
                incident[v].append((label, obj))
                incident[obj].append((label, v))
        self.size = size
        self.degree = np.asarray([len(entries) for entries in incident], np.int64)
        self.neighbour = np.asarray([u for entries in incident for _, u in entries], np.int64)
        self.label = np.asarray([label for entries in incident for label, _ in entries], np.int64)
        self.present0 = np.asarray(self._present0, np.int64)
        self.absent0 = np.asarray(self._absent0, np.int64)
        self.none0 = np.asarray(self._none0, np.int32)
        self.version += 1
        self.records, self.base, self.last = {}, None, None

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

    def usable(self, record: _Record | None) -> bool:
        return record is not None and record.version == self.version


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


class FastWL:
    """Embeds (TaskGraph, state) pairs in batches, keeping recent states' colours to start later states from."""

    def __init__(self, vocabulary: Vocabulary, cache_bytes: int = _CACHE_BYTES):
        self.vocabulary = vocabulary
        self._cache_bytes = cache_bytes
        self._lru: collections.OrderedDict[_Record, None] = collections.OrderedDict()
        self._bytes = 0
        # Every registered graph version's nodes, one after another (a graph's node v is node_base + v).
        self._first, self._degree = _Growing(), _Growing()  # node -> its (label, neighbour) entries
        self._present0, self._absent0 = _Growing(), _Growing()
        self._neighbour, self._label = _Growing(), _Growing()  # entries; neighbours as graph-local ids

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
            records = self._records(pairs, parents)
            if isinstance(records, list):
                break
            for graph, atoms in records.items():  # atoms outside a graph: extend it, then start over
                graph.extend(atoms)
        out = np.zeros((len(pairs), self.vocabulary.dim), np.float32)
        if records:
            np.stack([record.hist for record in records], out=out)
        unseen = sum(record.unseen for record in records)
        total = sum(record.nodes for record in records) * (self.vocabulary.iterations + 1)
        return out, unseen, total

    def _records(self, pairs, parents) -> list[_Record] | dict[TaskGraph, set[str]]:
        """Every pair's record, or the atoms that some graphs lack."""
        graphs = {id(graph): graph for graph, _ in pairs}.values()
        self._add_bases([graph for graph in graphs if not graph.usable(graph.base)])
        found: list[_Record | None] = [None] * len(pairs)
        new: dict[tuple[int, frozenset[str]], int] = {}  # (graph, state) -> index among the states to derive
        derive: list[tuple[TaskGraph, frozenset[str], _Record]] = []
        duplicates: list[tuple[int, int]] = []  # (row, index among the states to derive)
        rows, nodes, came = [], [], []  # layer-0 changes: (index among the states to derive, node, atom came?)
        unknown: dict[TaskGraph, set[str]] = {}
        lru = self._lru
        for row, (graph, state) in enumerate(pairs):
            record = graph.records.get(state)
            if record is not None:
                found[row] = record
                lru.move_to_end(record)
                continue
            key = (id(graph), state)
            if key in new:
                duplicates.append((row, new[key]))
                continue
            start = graph.records.get(parents[row]) if parents is not None and parents[row] is not None else None
            if start is None:
                start = graph.last if graph.usable(graph.last) else graph.base
            assert start is not None
            added, removed = state - start.state, start.state - state
            if len(added) + len(removed) > len(state):
                start, added, removed = graph.base, state, frozenset()
            node = graph.node
            try:
                changed = [node[atom] for atom in added] + [node[atom] for atom in removed]
            except KeyError:
                unknown.setdefault(graph, set()).update(atom for atom in added if atom not in node)
                continue
            index = new[key] = len(derive)
            derive.append((graph, state, start))
            rows += [index] * len(changed)
            nodes += changed
            came += [True] * len(added) + [False] * len(removed)
        if unknown:
            return unknown
        if derive:
            starts = [start for _, _, start in derive]
            derived = self._derive([g for g, _, _ in derive], [s for _, s, _ in derive], starts, rows, nodes, came)
            for (graph, state, _), record in zip(derive, derived):
                graph.records[state] = record
                graph.last = record
                lru[record] = None
                self._bytes += record.nbytes
            for start in starts:
                if start.graph.records.get(start.state) is start:
                    lru.move_to_end(start)
            for row, (graph, state) in enumerate(pairs):
                if found[row] is None:
                    found[row] = derived[new[(id(graph), state)]]
            self._evict()
        return found  # type: ignore[return-value]  # every row was filled

    def _evict(self) -> None:
        lru = self._lru
        while self._bytes > self._cache_bytes and len(lru) > 1:
            record, _ = lru.popitem(last=False)
            self._bytes -= record.nbytes
            if record.graph.records.get(record.state) is record:
                del record.graph.records[record.state]

    def _register(self, graph: TaskGraph) -> None:
        """Append the graph's node and entry tables to the engine's."""
        entries = self._neighbour.append(graph.neighbour)
        self._label.append(graph.label)
        graph.node_base = self._degree.append(graph.degree)
        self._first.append(entries + np.cumsum(graph.degree) - graph.degree)
        self._present0.append(graph.present0)
        self._absent0.append(graph.absent0)

    def _add_bases(self, graphs: list[TaskGraph]) -> None:
        """The record of the state with no fluent atom, per graph, derived from a graph with no node."""
        if not graphs:
            return
        for graph in graphs:
            self._register(graph)
        layers = self.vocabulary.iterations + 1
        empty = [
            _Record(graph, frozenset(), np.full(layers * graph.size, ABSENT, np.int32), self._zeros, 0, 0)
            for graph in graphs
        ]
        rows = np.repeat(np.arange(len(graphs)), [graph.size for graph in graphs])
        nodes = np.concatenate([np.arange(graph.size) for graph in graphs])
        colours = np.concatenate([graph.none0 for graph in graphs])
        for graph, base in zip(
            graphs, self._derive(graphs, [frozenset()] * len(graphs), empty, rows, nodes, colours=colours)
        ):
            graph.base = base

    @property
    def _zeros(self) -> np.ndarray:
        return np.zeros(self.vocabulary.dim, np.float32)

    def _derive(
        self,
        graphs: Sequence[TaskGraph],
        states: Sequence[frozenset[str]],
        starts: Sequence[_Record],
        rows,
        nodes,
        came=None,
        colours=None,
    ) -> list[_Record]:
        """Records of the states whose layer-0 colours are the starts' with changes at (row, node) applied.

        A change's colour is `colours`, or the node's colour when present (`came`) or absent.
        Layer j changes only at nodes whose own or a neighbour's layer j-1 colour changed,
        so only those are recoloured. All rows go together: the starts' colours are copied
        into one buffer, and row r's node v at layer j sits at offset[r] + j * size[r] + v.
        """
        vocabulary = self.vocabulary
        size = np.asarray([graph.size for graph in graphs], np.int64)
        width = size * (vocabulary.iterations + 1)
        offset = np.cumsum(width) - width
        node_base = np.asarray([graph.node_base for graph in graphs], np.int64)
        buffer = np.concatenate([start.colours for start in starts])
        hist = np.stack([start.hist for start in starts])
        unseen = np.asarray([start.unseen for start in starts], np.int64)
        present = np.asarray([start.nodes for start in starts], np.int64)

        r, v = np.asarray(rows, np.int64), np.asarray(nodes, np.int64)
        if colours is None:
            where = node_base[r] + v
            colours = np.where(np.asarray(came, bool), self._present0.array[where], self._absent0.array[where])
        position = offset[r] + v
        old = buffer[position]
        keep = colours != old
        r, v, new, old = r[keep], v[keep], colours[keep], old[keep]
        buffer[offset[r] + v] = new
        present += np.bincount(r[old == ABSENT], minlength=len(graphs))
        present -= np.bincount(r[new == ABSENT], minlength=len(graphs))
        changes = [(r, old, new)]

        first, degree, neighbour = self._first.array, self._degree.array, self._neighbour.array
        for j in range(1, vocabulary.iterations + 1):
            where = node_base[r] + v
            counts = degree[where]
            around = np.repeat(offset[r], counts) + neighbour[np.repeat(first[where], counts) + _ramp(counts)]
            keys = np.unique(np.concatenate([offset[r] + v, around]))  # buffer offsets of layer 0
            r = np.searchsorted(offset, keys, side="right") - 1
            v = keys - offset[r]
            own = buffer[keys + (j - 1) * size[r]].astype(np.int64)
            new = own.copy()  # absent stays absent, unseen stays unseen
            refine = np.flatnonzero(own >= 0)
            if len(refine):
                new[refine] = self._refine(j, buffer, offset, size, node_base, r[refine], v[refine], own[refine])
            position = keys + j * size[r]
            old = buffer[position]
            keep = new != old
            r, v, new, old = r[keep], v[keep], new[keep], old[keep]
            buffer[position[keep]] = new
            changes.append((r, old, new))

        r, old, new = (np.concatenate(parts) for parts in zip(*changes))
        np.add.at(hist, (r[new >= 0], new[new >= 0]), 1)
        np.add.at(hist, (r[old >= 0], old[old >= 0]), -1)
        unseen += np.bincount(r[new == UNSEEN], minlength=len(graphs))
        unseen -= np.bincount(r[old == UNSEEN], minlength=len(graphs))
        return [
            _Record(graph, state, buffer[o : o + w], hist[i], unseen[i], present[i])
            for i, (graph, state, o, w) in enumerate(zip(graphs, states, offset, width))
        ]

    def _refine(self, j: int, buffer, offset, size, node_base, r, v, own) -> np.ndarray:
        """Layer-j colours of the nodes (r, v) whose layer j-1 colour `own` is a colour (not absent or unseen).

        A key is sorted as wlplan sorts it, as codes label * code_base + colour + 1 offset
        by span per key. A neighbour's UNSEEN colour gives a code that no vocabulary key has.
        """
        vocabulary = self.vocabulary
        where = node_base[r] + v
        counts = self._degree.array[where]
        entries = np.repeat(self._first.array[where], counts) + _ramp(counts)
        at = np.repeat(offset[r] + (j - 1) * size[r], counts) + self._neighbour.array[entries]
        colour = buffer[at].astype(np.int64)
        there = colour != ABSENT
        key = np.repeat(np.arange(len(r)), counts)[there]
        packed = key * vocabulary.span + self._label.array[entries[there]] * vocabulary.code_base + colour[there] + 1
        packed = np.sort(packed) if vocabulary.multiset else np.unique(packed)
        key = packed // vocabulary.span
        return vocabulary.tables[j - 1].lookup(own, key, packed - key * vocabulary.span)
