"""State encoders: (task, state) pairs -> fixed-size float32 vectors.

Two encodings share one interface so that datasets, models and decoding never
care which is used:

* WL (the paper's method): Weisfeiler-Leman colour histograms of the state's
  instance learning graph (wlplan, ILG, k=2, multiset hash, no pruning). The
  dimension D is the size of a colour vocabulary collected from the training
  states, so it does not depend on the number of objects; colours never seen in
  training are dropped (and counted, as an out-of-distribution diagnostic).
* FSF (the ablation): one slot per object, values per the paper's FSF appendix;
  D = N + 1 for the N object slots fixed when the encoder is fitted.

`embed` takes many states of many tasks at once, because decoding embeds every
successor of every open problem at every step. WL embeds through `wl_fast`,
which equals wlplan exactly but recolours only what changed since a nearby
cached state; wlplan (one call per batch of up to 2048 states) fits the
vocabulary and stays the reference. Per-task preprocessing (ILGs, wlplan
Problem, FSF slot tables) is cached by task identity, since the same Task
objects are embedded thousands of times. An encoder is saved as one JSON file
and refuses tasks of another domain.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import pathlib
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar, get_args

import numpy as np
from wlplan.data import DomainDataset, ProblemDataset
from wlplan.feature_generator import (
    CCWLFeatures,
    IWLFeatures,
    KWL2Features,
    LWL2Features,
    NIWLFeatures,
    WLFeatures,
    init_feature_generator,
)
from wlplan.planning import Atom, Domain, Predicate, Problem, State

from statecentric_jax.atomic import replace_atomically
from statecentric_jax.embedding.wl_fast import FastWL, TaskGraph, Vocabulary
from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import Task, atom_arguments, atom_predicate
from statecentric_jax.problems.domains import DOMAINS

Encoding = Literal["wl", "fsf"]
KINDS: tuple[str, ...] = get_args(Encoding)
FSF_DOMAINS = DOMAINS  # FSF is hand-designed for exactly these
FSF_PAD = -99.0  # slot beyond this problem's objects
FSF_DONT_CARE = -10.0  # the goal says nothing about this slot
_FORMAT = 1  # version of our metadata inside a saved encoder file
_CACHED_TASKS = 4096
_WL_CALL_LIMIT = 2048  # states per wlplan call: bounds the memory its graphs take
# wlplan's feature algorithms for classical states, and the class that reads each back: wlplan 2.1.0
# saves lwl2 and kwl2 under other names ("2-lwl", "2-kwl") than its load_feature_generator knows.
_WL_CLASSES = {
    "wl": WLFeatures,
    "lwl2": LWL2Features,
    "kwl2": KWL2Features,
    "iwl": IWLFeatures,
    "niwl": NIWLFeatures,
    "ccwl": CCWLFeatures,
}
WL_ALGORITHMS = tuple(_WL_CLASSES)
WL_GRAPHS = ("ilg", "ploig")  # wlplan's graphs for classical states

Pair = tuple[Task, frozenset[str]]
TasksAndTrajectories = Sequence[tuple[Task, Sequence[frozenset[str]]]]
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class WLSettings:
    """wlplan settings; the defaults are the paper's.

    `goals_in_vocabulary`: also collect colours from the phi(g) graphs. Off by
    default: collecting from the training trajectories' states alone gives
    exactly the paper's D (172/302/552/138 for blocks/gripper/logistics/visitall).

    `normalize`: the paper defines phi(s)_i as the raw count of colour i (WL
    appendix) but its pipeline appendix says "normalized color histogram". We
    default to raw counts: a one-atom change then moves the embedding by the
    same amount in a 4-block and a 17-block problem, which is what a delta model
    trained on small problems needs to act on large ones. `normalize=True`
    divides each row by its number of colour occurrences, seen or unseen
    (= ILG nodes x (iterations + 1)).

    `algorithm` and `graph`: wlplan's other feature algorithms (e.g. "lwl2", which
    colours pairs of nodes) and graphs (e.g. "ploig", objects joined by their atoms),
    for a cost-to-go's own φ (`value.wl_algorithm`, `value.wl_graph`) and for comparing
    features (benchmarks/ranking_bound.py). Only the defaults embed through `wl_fast`;
    the others call wlplan.
    """

    iterations: int = 2
    multiset_hash: bool = True
    goals_in_vocabulary: bool = False
    normalize: bool = False
    algorithm: str = "wl"
    graph: str = "ilg"

    def __post_init__(self) -> None:
        if self.algorithm not in WL_ALGORITHMS:
            raise InputError(None, f"unknown WL algorithm '{self.algorithm}' (use one of {', '.join(WL_ALGORITHMS)})")
        if self.graph not in WL_GRAPHS:
            raise InputError(None, f"unknown WL graph '{self.graph}' (use one of {', '.join(WL_GRAPHS)})")
        if self.normalize and self.graph != "ilg":
            raise InputError(None, f"normalize counts the nodes of an ILG; graph '{self.graph}' cannot be normalized")


class _TaskCache(Generic[T]):
    """Per-task preprocessing keyed by identity (hashing a Task hashes all its operators)."""

    def __init__(self, build: Callable[[Task], T]):
        self._build = build
        self._entries: collections.OrderedDict[int, tuple[Task, T]] = collections.OrderedDict()

    def __call__(self, task: Task) -> T:
        entry = self._entries.get(id(task))
        if entry is None:
            entry = (task, self._build(task))
            self._entries[id(task)] = entry  # holding the task keeps its id from being reused
            if len(self._entries) > _CACHED_TASKS:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(id(task))
        return entry[1]


class StateEncoder(Protocol):
    """What decoding needs from an embedding: batched state and goal embeddings of one width."""

    @property
    def dim(self) -> int: ...

    def embed(self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None] | None = None) -> np.ndarray: ...

    def embed_goals(self, tasks: Sequence[Task]) -> np.ndarray: ...


class Encoder:
    """Common front of the WL and FSF encoders: attributes `domain`, `kind`, `dim`."""

    kind: str

    def __init__(self, domain: str, predicates: Sequence[tuple[str, int]]):
        self.domain = domain
        self.predicates = tuple((str(name), int(arity)) for name, arity in predicates)

    @property
    def dim(self) -> int:
        raise NotImplementedError

    def embed(self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None] | None = None) -> np.ndarray:
        """float32 [len(pairs), dim] embeddings of (task, fluent state) pairs.

        `parents[i]`, if given, is a state of the same task embedded before that pair i's state
        was derived from (a search node's parent): a hint that makes WL faster, never a change
        in the result.
        """
        return self.embed_with_unseen(pairs, parents)[0]

    def embed_with_unseen(
        self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None] | None = None
    ) -> tuple[np.ndarray, float]:
        """`embed`, and the fraction of WL colour occurrences outside the vocabulary (0 for FSF)."""
        raise NotImplementedError

    def embed_goals(self, tasks: Sequence[Task]) -> np.ndarray:
        """float32 [len(tasks), dim] goal embeddings phi(g)."""
        raise NotImplementedError

    def save(self, path: str | os.PathLike) -> None:
        """Write the encoder atomically as one JSON file (load with `load_encoder`)."""
        raise NotImplementedError

    def _metadata(self, **extra: Any) -> dict:
        return {
            "format": _FORMAT,
            "kind": self.kind,
            "domain": self.domain,
            "predicates": [list(p) for p in self.predicates],
            **extra,
        }

    def _check_task(self, task: Task) -> None:
        if task.predicates != self.predicates:
            raise InputError(
                task.problem_file,
                f"the {self.kind.upper()} encoder was built for domain '{self.domain}' and cannot embed a problem of "
                f"domain '{task.domain_name}' (its predicates differ)",
            )


def _common_predicates(tasks: Sequence[Task]) -> tuple[tuple[str, int], ...]:
    if not tasks:
        raise InputError(None, "no problems to fit an encoder on")
    for task in tasks[1:]:
        if task.predicates != tasks[0].predicates:
            raise InputError(
                task.problem_file, f"domain '{task.domain_name}' differs from that of {tasks[0].problem_file}"
            )
    return tasks[0].predicates


# --------------------------------------------------------------------------- WL


def _wlplan_atom(text: str, predicates: dict[str, Predicate]) -> Atom:
    return Atom(predicates[atom_predicate(text)], list(atom_arguments(text)))


@dataclasses.dataclass
class _WLTask:
    problem: Problem
    static: list[Atom]
    atoms: dict[str, Atom]  # fluent atoms parsed so far


@contextlib.contextmanager
def _stdout_silenced() -> Iterator[None]:
    """wlplan's C++ code prints progress to fd 1; keep it out of our output."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


class WLEncoder(Encoder):
    """WL colour histograms of instance learning graphs (wlplan).

    phi(s, g) embeds the ILG of state s, which contains the goal g. wlplan's ILG
    ignores `Problem(statics=...)`, so the static atoms (e.g. visitall's
    `connected`) are put into every wlplan State. phi(g) is the goal embedded
    as a state: the goal atoms plus the statics, with the same goal. Domain
    constants are treated as ordinary objects (none of our domains has any).

    `use_fast` (default True) embeds through `wl_fast` (same vectors, much
    faster on successors of recently embedded states); False calls wlplan, the
    reference for tests and benchmarks.
    """

    kind = "wl"
    use_fast = True

    def __init__(self, domain: str, predicates: Sequence[tuple[str, int]], settings: WLSettings, features: Any = None):
        super().__init__(domain, predicates)
        self.settings = settings
        self._wl_predicates = {name: Predicate(name, arity) for name, arity in self.predicates}
        # wlplan 2.1.0 numbers predicates (hence ILG node colours) in the order given but saves them
        # sorted its own way, and a loaded generator numbers them in the saved order: give them in
        # that order, or fitted and reloaded encoders disagree (e.g. gripper's at / at-robby).
        wl_order = Domain(domain, list(self._wl_predicates.values()), [], [], []).predicates
        self._wl_domain = Domain(domain, list(wl_order), [], [], [])
        self._features = (
            features
            if features is not None
            else init_feature_generator(
                settings.algorithm,
                self._wl_domain,
                graph_representation=settings.graph,
                iterations=settings.iterations,
                pruning="none",
                multiset_hash=settings.multiset_hash,
            )
        )
        self._tasks = _TaskCache(self._prepare)
        self._fast: FastWL | None = None  # built on first use: the vocabulary is final once fitted
        self._fast_unsupported = False
        self._graphs = _TaskCache(self._fast_graph)

    @classmethod
    def fit(cls, domain: str, tasks_and_trajectories: TasksAndTrajectories, settings: WLSettings) -> WLEncoder:
        """Collect the colour vocabulary from the given (training) states, and goals if so set."""
        encoder = cls(domain, _common_predicates([task for task, _ in tasks_and_trajectories]), settings)
        pairs = [(task, state) for task, states in tasks_and_trajectories for state in states]
        if settings.goals_in_vocabulary:
            pairs += [(task, task.goal) for task, _ in tasks_and_trajectories]
        with _stdout_silenced():
            encoder._features.collect(encoder._dataset(pairs)[0])
        return encoder

    @property
    def dim(self) -> int:
        return int(self._features.get_n_features())

    def _prepare(self, task: Task) -> _WLTask:
        self._check_task(task)
        goals = [_wlplan_atom(a, self._wl_predicates) for a in sorted(task.goal)]
        static = [_wlplan_atom(a, self._wl_predicates) for a in sorted(task.static)]
        return _WLTask(Problem(self._wl_domain, list(task.objects), goals, []), static, {})

    def _state(self, prepared: _WLTask, atoms: frozenset[str]) -> State:
        parsed = prepared.atoms
        for text in atoms - parsed.keys():
            parsed[text] = _wlplan_atom(text, self._wl_predicates)
        return State(
            prepared.static + [parsed[text] for text in sorted(atoms)]
        )  # sorted: vocabulary order is reproducible

    def _dataset(self, pairs: Sequence[Pair]) -> tuple[DomainDataset, np.ndarray]:
        """One wlplan dataset for all pairs, grouped by task, and the pair index of each of its rows."""
        groups: dict[int, tuple[Task, list[int]]] = {}
        for index, (task, _) in enumerate(pairs):
            groups.setdefault(id(task), (task, []))[1].append(index)
        data, order = [], []
        for task, indices in groups.values():
            prepared = self._tasks(task)
            states = [self._state(prepared, pairs[i][1] - task.static) for i in indices]
            try:
                data.append(ProblemDataset(prepared.problem, states))
            except RuntimeError as e:  # an atom naming an object that the problem lacks
                raise InputError(task.problem_file, f"a state does not fit the problem: {e}") from None
            order.extend(indices)
        return DomainDataset(self._wl_domain, data), np.asarray(order, dtype=np.int64)

    def _fast_engine(self) -> FastWL | None:
        """wl_fast on this encoder's vocabulary (read back from wlplan's JSON), or None if it cannot match wlplan."""
        if self._fast is None and not self._fast_unsupported:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "features.json")
                with _stdout_silenced():
                    self._features.save(path)
                with open(path, encoding="utf-8") as f:
                    vocabulary = Vocabulary.from_wlplan_json(json.load(f))
            self._fast = FastWL(vocabulary) if vocabulary is not None else None
            self._fast_unsupported = vocabulary is None
        return self._fast

    def _fast_graph(self, task: Task) -> TaskGraph:
        self._check_task(task)
        fast = self._fast_engine()
        assert fast is not None, "the incremental WL path is used only where it is supported"
        return fast.graph(task)

    def _embed_wlplan(self, pairs: Sequence[Pair]) -> tuple[np.ndarray, float]:
        out = np.zeros((len(pairs), self.dim), np.float32)
        features = self._features
        seen, unseen = sum(features.get_seen_counts()), sum(features.get_unseen_counts())
        for start in range(0, len(pairs), _WL_CALL_LIMIT):
            chunk = pairs[start : start + _WL_CALL_LIMIT]
            dataset, order = self._dataset(chunk)
            out[start + order] = np.asarray(features.embed(dataset), dtype=np.float32).reshape(len(chunk), self.dim)
        seen = sum(features.get_seen_counts()) - seen
        unseen = sum(features.get_unseen_counts()) - unseen
        return out, unseen / max(seen + unseen, 1)

    def embed_with_unseen(
        self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None] | None = None
    ) -> tuple[np.ndarray, float]:
        fast = self._fast_engine() if self.use_fast else None
        if fast is not None:
            graphs: dict[int, TaskGraph] = {}  # this call's, by task identity (cheaper than the cache's bookkeeping)
            for task, _ in pairs:
                if id(task) not in graphs:
                    graphs[id(task)] = self._graphs(task)
            out, unseen, total = fast.embed([(graphs[id(task)], state) for task, state in pairs], parents)
            fraction = unseen / max(total, 1)
        else:
            out, fraction = self._embed_wlplan(pairs)
        if self.settings.normalize and len(pairs):
            nodes = [len(t.objects) + len(t.goal) + len((s | t.static) - t.goal) for t, s in pairs]
            out /= (self.settings.iterations + 1) * np.asarray(nodes, np.float32)[:, None]
        return out, fraction

    def embed_goals(self, tasks: Sequence[Task]) -> np.ndarray:
        return self.embed([(task, task.goal) for task in tasks])

    def save(self, path: str | os.PathLike) -> None:
        def write(tmp: pathlib.Path) -> None:
            self._features.save(str(tmp))
            with open(tmp, encoding="utf-8") as f:
                data = json.load(f)
            data["statecentric"] = self._metadata(settings=dataclasses.asdict(self.settings))
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f)

        replace_atomically(path, write)

    @classmethod
    def _from_file(cls, path: str, meta: dict) -> WLEncoder:
        try:
            settings = WLSettings(**meta["settings"])
            with _stdout_silenced():
                features = _WL_CLASSES[settings.algorithm](filename=path, quiet=True)
        except (KeyError, TypeError, ValueError, RuntimeError, InputError) as e:
            raise InputError(path, f"corrupt WL encoder file ({type(e).__name__}: {e})") from None
        return cls(meta["domain"], meta["predicates"], settings, features)


# -------------------------------------------------------------------------- FSF


def _fsf_writes(domain: str, atom: str, slot: dict[str, int]) -> list[tuple[int, float]]:
    """The (slot, value) pairs that one atom sets (none for atoms FSF does not represent)."""
    name, args = atom_predicate(atom), atom_arguments(atom)
    if domain == "blocks":
        if name == "ontable":
            return [(slot[args[0]], 0.0)]
        if name == "holding":
            return [(slot[args[0]], -1.0)]
        if name == "on":
            return [(slot[args[0]], slot[args[1]])]
    elif domain == "gripper":
        if name == "at-robby":
            return [(0, slot[args[0]])]
        if name == "at":
            return [(slot[args[0]], slot[args[1]])]
        if name == "carry":
            return [(slot[args[0]], -slot[args[1]]), (slot[args[1]], slot[args[0]])]
        if name == "free":
            return [(slot[args[0]], 0.0)]
    elif domain == "logistics":
        if name == "at":
            return [(slot[args[0]], slot[args[1]])]
        if name == "in":
            return [(slot[args[0]], -slot[args[1]])]
    elif domain == "visitall":
        if name == "at-robot":
            return [(0, slot[args[0]])]
        if name == "visited":
            return [(slot[args[0]], 1.0)]
    return []


def _check_fsf_domain(domain: str) -> None:
    if domain not in FSF_DOMAINS:
        raise InputError(None, f"FSF is defined only for {', '.join(FSF_DOMAINS)}, not for domain '{domain}'")


class FSFEncoder(Encoder):
    """Fixed-size factored vectors (the paper's FSF appendix); D = num_slots + 1.

    Slot 0 is global; slot i (1..n) belongs to the problem's i-th object in
    problem-file order, and slots n+1..N are padding (-99). N is the largest
    object count seen when fitting, which gives the paper's FSF sizes (17, 46,
    37, 121 on its splits). A value that names an object (the paper's "room
    index", "location index", "block j", "gripper j", "vehicle j", "ball j",
    "cell index") is that object's slot number i, so no object types are needed.
    Per domain (objects no rule mentions, e.g. rooms and cities, stay 0):
    blocks: slot 0 = 0; block: 0 on table, -1 held, j on block j.
    gripper: slot 0 = robot's room; ball: its room, or -j if carried by gripper
      j; gripper: 0 free, j holding ball j.
    logistics: slot 0 = 0; package/truck/airplane: its location, or -j if in
      vehicle j.
    visitall: slot 0 = robot's cell; cell: 0 unvisited, 1 visited.
    Goals set the values of the atoms they name and -10 (don't care) in every
    other object slot; slot 0 is 0 where it is unused (blocks, logistics) and
    otherwise -10 unless the goal names the robot's position.
    """

    kind = "fsf"

    def __init__(self, domain: str, predicates: Sequence[tuple[str, int]], num_slots: int):
        _check_fsf_domain(domain)
        super().__init__(domain, predicates)
        self.num_slots = int(num_slots)
        self._tasks = _TaskCache(self._prepare)

    @classmethod
    def fit(cls, domain: str, tasks: Sequence[Task]) -> FSFEncoder:
        """N = the largest object count of the given tasks: pass every split to be embedded."""
        _check_fsf_domain(domain)
        return cls(domain, _common_predicates(tasks), max(len(task.objects) for task in tasks))

    @property
    def dim(self) -> int:
        return self.num_slots + 1

    def _prepare(self, task: Task) -> dict[str, int]:
        self._check_task(task)
        if len(task.objects) > self.num_slots:
            raise InputError(
                task.problem_file,
                f"cannot be FSF-encoded: it has {len(task.objects)} objects for the encoder's {self.num_slots} slots",
            )
        return {o: i for i, o in enumerate(task.objects, 1)}

    def _row(self, task: Task, atoms: frozenset[str], goal: bool) -> np.ndarray:
        slots = self._tasks(task)
        row = np.full(self.dim, FSF_PAD, np.float32)
        row[: len(slots) + 1] = FSF_DONT_CARE if goal else 0.0
        if self.domain in ("blocks", "logistics"):
            row[0] = 0.0
        for atom in atoms:
            for slot, value in _fsf_writes(self.domain, atom, slots):
                row[slot] = value
        return row

    def _stack(self, rows: list[np.ndarray]) -> np.ndarray:
        return np.stack(rows) if rows else np.zeros((0, self.dim), np.float32)

    def embed_with_unseen(
        self, pairs: Sequence[Pair], parents: Sequence[frozenset[str] | None] | None = None
    ) -> tuple[np.ndarray, float]:
        return self._stack([self._row(task, state, goal=False) for task, state in pairs]), 0.0

    def embed_goals(self, tasks: Sequence[Task]) -> np.ndarray:
        return self._stack([self._row(task, task.goal, goal=True) for task in tasks])

    def save(self, path: str | os.PathLike) -> None:
        def write(tmp: pathlib.Path) -> None:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"statecentric": self._metadata(num_slots=self.num_slots)}, f)

        replace_atomically(path, write)

    @classmethod
    def _from_file(cls, path: str, meta: dict) -> FSFEncoder:
        try:
            return cls(meta["domain"], meta["predicates"], int(meta["num_slots"]))
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(path, f"corrupt FSF encoder file ({type(e).__name__}: {e})") from None


# ------------------------------------------------------------------------ front

_CLASSES: dict[str, type[WLEncoder] | type[FSFEncoder]] = {"wl": WLEncoder, "fsf": FSFEncoder}


def fit_encoder(
    kind: str, domain: str, tasks_and_trajectories: TasksAndTrajectories, wl_settings: WLSettings | None = None
) -> Encoder:
    """Fit a `kind` encoder for `domain` (canonical name, e.g. "blocks").

    WL collects its vocabulary from the given states (pass the training split);
    FSF only sizes its slots from the given tasks (pass every split).
    """
    if kind == "wl":
        return WLEncoder.fit(domain, tasks_and_trajectories, wl_settings or WLSettings())
    if kind == "fsf":
        return FSFEncoder.fit(domain, [task for task, _ in tasks_and_trajectories])
    raise InputError(None, f"unknown encoding '{kind}' (choose from {', '.join(KINDS)})")


def load_encoder(path: str | os.PathLike, domain: str | None = None, kind: str | None = None) -> Encoder:
    """Load a saved encoder, refusing one built for another domain or kind."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise InputError(path, "encoder file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(path, f"corrupt encoder file ({e})") from None
    meta = data.get("statecentric") if isinstance(data, dict) else None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT or meta.get("kind") not in _CLASSES:
        raise InputError(path, "not a statecentric_jax encoder file")
    if domain is not None and meta.get("domain") != domain:
        raise InputError(path, f"encoder was built for domain '{meta.get('domain')}', not '{domain}'")
    if kind is not None and meta["kind"] != kind:
        raise InputError(path, f"encoder is {meta['kind'].upper()}, not {kind.upper()}")
    return _CLASSES[meta["kind"]]._from_file(path, meta)
