"""The strategy-independent half of decoding: expand a batch of search nodes at once.

For every node to expand, across all instances being decoded, the expander calls the
transition model once (one batched `predict_next`), enumerates the true symbolic
successors, embeds each distinct new state of an instance once (one batched `embed`,
told each state's parent), and computes every candidate's distance to its node's
prediction in one NumPy call; a cost-to-go with a φ of its own embeds the new states once
more, for itself. Strategies (beam, best-first, ...) decide which nodes to
expand and what to keep; they never call the model or the encoder themselves.

The model call runs in `model_thread` while the calling thread enumerates and embeds
the successors: the two do not depend on each other, and XGBoost and XLA release the GIL,
so on two cores a step costs about the larger of the two instead of their sum. The calling
thread waits until the model thread has taken the call up: starting it needs the GIL, which
the calling thread's pure-Python successor work would otherwise keep (CPython switches
threads only every 5 ms), so the model would mostly run after that work, not beside it. The
arithmetic is the same either way, so plans are too.

A node stores the model carry it is expanded with (a pytree row; None for stateless
models), so any strategy can expand any node in any order with either model kind. A node
may come without its embedding (best-first keeps many nodes that it never expands, in a
compact form); the expander embeds such a node, from its parent's state, when it expands it.
With deferred (lazy) evaluation the node expanded is estimated instead of its successors, which
inherit that value; they are embedded only where the model is asked for their distances.

Where the search keeps packed states (best-first's closed list), a successor comes as its key
(`SuccessorGenerator.each_successor_key`) and its state is built only when something reads it: the
embedding of the states estimated or predicted from, the goal test of a successor whose operator adds
every goal atom its parent lacks, the node made of it. A Satellite state has thousands of successors; with
`estimate_helpful_only` the search reads the states of a few.

New states are embedded a chunk at a time, in order (embeddings are row by row, so the chunks change no
value): at most `CHUNK_STATES` states, `CHUNK_ATOMS` atoms of their graphs, static ones included (a
Rovers state of 300 objects has 46,000 static atoms, and the WL graphs of one call are held together),
and as many atoms as the chunk before embedded in `CHUNK_SECONDS`. Between chunks the caller's
`interrupt` may end problems, and also every `CHUNK_STATES` new states while successors are built (they are
built one at a time): one node can have hundreds of thousands of successors, and decoding's time and memory
limits must hold within its expansion too.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import threading
import time
import weakref
from collections.abc import Callable, Collection, Container, Iterator, Mapping, Sequence
from typing import Any, Protocol

import jax
import numpy as np

from statecentric_jax.embedding.encoders import StateEncoder
from statecentric_jax.learning.transitions import TransitionModel
from statecentric_jax.planning.packing import Key, PackedStates, StatePacker
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import Operator, Task
from statecentric_jax.search import scoring

State = frozenset
CHUNK_STATES = 4096  # new states embedded per call at most; the caller's limits are checked between calls
CHUNK_ATOMS = 1 << 20  # and atoms of their graphs (state, static and goal atoms) per call at most
CHUNK_SECONDS = 0.5  # and as many as took this long in the chunk before
FIRST_CHUNK_ATOMS = 1 << 14  # and before any chunk was timed, this many
TIE_TARGET_BYTES = 1 << 26  # the model's predictions kept for the parents of tied open nodes (`tie_distances`)


class CostToGo(Protocol):
    """A learned estimate of the remaining plan length from its features of a state and a goal."""

    @property
    def reads_model_embedding(self) -> bool: ...  # whether `embed` reads the transition model's embeddings

    def embed(
        self, pairs: Sequence[tuple[Task, State]], parents: Sequence[State | None], embeddings: np.ndarray | None
    ) -> np.ndarray: ...

    def estimate(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray: ...


@dataclasses.dataclass(eq=False)
class Node:
    """A search node: a state reached by a plan from the initial state."""

    state: State
    embedding: np.ndarray | None  # φ(state), the model's next input; None: embedded again when expanded
    plan: tuple | None  # linked list (action, parent's plan): no plan copies
    depth: int
    score: float  # the strategy's score (beam: sum of step distances)
    carry: Any = None  # model carry this node is expanded with (batch of one); None: stateless model
    parent: Node | None = None
    visited: set | None = None  # states on the path (beam's no-revisit rule); None where unused

    def path_states(self) -> set:
        """The states from the initial state to this one."""
        states: set = set()
        node: Node | None = self
        while node is not None:
            states.add(node.state)
            node = node.parent
        return states

    def actions(self) -> list[str]:
        plan, node_plan = [], self.plan
        while node_plan is not None:
            action, node_plan = node_plan
            plan.append(action)
        return plan[::-1]


@dataclasses.dataclass(eq=False)
class Problem:
    """What the expander needs of one instance."""

    task: Task
    generator: SuccessorGenerator
    goal: np.ndarray  # φ(g)


@dataclasses.dataclass(eq=False)
class Expansion:
    """The successors of one expanded node, in operator order, with their distances."""

    node: Node
    actions: list[str]
    operators: list[Operator]
    keys: list[Key] | None  # the successors' packed keys, where the search keeps packed states
    states: Sequence[State]  # built when read (`_NewStates`)
    embeddings: np.ndarray | None  # [C, D]; None: not embedded (nothing reads them: `expand`)
    distances: np.ndarray | None  # [C] float32, to the model's prediction for `node`; None: not predicted
    values: np.ndarray | None  # [C] cost-to-go estimates, when a cost-to-go model is given
    carry: Any  # the carry the children are expanded with

    def reaches_goal(self, index: int, task: Task, missing: frozenset[str]) -> bool:
        """Whether the successor at `index` satisfies the task's goal. `missing`: the goal atoms its parent lacks;
        its operator must add them all, so most successors are told without their state being built."""
        return missing <= self.operators[index].add and task.goal_reached(self.states[index])

    def child(self, index: int, score: float) -> Node:
        return Node(
            self.states[index],
            None if self.embeddings is None else self.embeddings[index],
            (self.actions[index], self.node.plan),
            self.node.depth + 1,
            score,
            self.carry,
            self.node,
        )


@dataclasses.dataclass
class DecodeStats:
    """Where decoding time went (seconds), and how many nodes it expanded and generated. `model` runs in a
    thread of its own, beside successors and embedding; `model_wait` is what the decoding thread then still
    waited for it; `strategy` is the strategies' own work (queues, closed lists)."""

    model: float = 0.0
    successors: float = 0.0
    embedding: float = 0.0
    cost_to_go: float = 0.0  # its own features (where it has them) and its estimates
    distances: float = 0.0
    model_wait: float = 0.0
    strategy: float = 0.0
    total: float = 0.0
    expanded: int = 0
    generated: int = 0  # successors not skipped, one per (expanded node, successor)

    def add(self, field: str, amount: float) -> None:
        setattr(self, field, getattr(self, field) + amount)


Interrupt = Callable[[Mapping[Problem, int]], Collection[Problem]]
"""Given each problem's successors so far in the expansion under way, the problems that must end now."""


def stack_carries(carries: Sequence[Any]) -> Any:
    """One batch carry from per-node carries (each a batch of one); None for stateless models."""
    if carries[0] is None:
        return None
    return jax.tree_util.tree_map(lambda *rows: np.concatenate(rows), *carries)


def _stacked(parts: Sequence[np.ndarray], width: int) -> np.ndarray:
    """The rows of `parts` in one array (without a copy when there is one part)."""
    if not parts:
        return np.zeros((0, width), np.float32)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def carry_row(carry: Any, row: int) -> Any:
    return None if carry is None else jax.tree_util.tree_map(lambda x: x[row : row + 1], carry)


class _NewStates:
    """The distinct new states of one `Expander.expand` call, by row, each with its problem and parent. A state
    that came as a key (`SuccessorGenerator.each_successor_key`) is built when first read: in Satellite a state
    has thousands of successors, and with `estimate_helpful_only` the search reads the states of a few."""

    def __init__(self) -> None:
        self.owners: list[Problem] = []
        self.parents: list[State] = []  # incremental embeddings start there
        self._states: list[State | None] = []  # None: not built yet
        self._made: list[tuple[Operator, Key, StatePacker] | None] = []  # how to build it, where it came as a key

    def __len__(self) -> int:
        return len(self.owners)

    def add(self, problem: Problem, parent: State, op: Operator, child: State | Key, packer: StatePacker | None) -> int:
        """The row of a new successor: a state, or (with the packer it was keyed by) its key."""
        self.owners.append(problem)
        self.parents.append(parent)
        if packer is None:
            self._states.append(child)  # type: ignore[arg-type]  # no packer: a state
            self._made.append(None)
        else:
            self._states.append(None)
            self._made.append((op, child, packer))  # type: ignore[arg-type]  # a packer: a key
        return len(self.owners) - 1

    def state(self, row: int) -> State:
        state = self._states[row]
        if state is None:
            op, key, packer = self._made[row]  # type: ignore[misc]  # not built: it came as a key
            state = self._states[row] = packer.remember(op.apply(self.parents[row]), key)
        return state

    def pair(self, row: int) -> tuple[Task, State]:
        return self.owners[row].task, self.state(row)


class _Successors(Sequence[State]):
    """The successor states of one expansion, by their rows in `_NewStates`, each built when read."""

    def __init__(self, new: _NewStates, rows: list[int]):
        self._new, self._rows = new, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: int) -> State:  # type: ignore[override]  # no slices
        return self._new.state(self._rows[index])


class Expander:
    def __init__(
        self,
        model: TransitionModel,
        encoder: StateEncoder,
        metric: scoring.Metric,
        stats: DecodeStats,
        model_thread: concurrent.futures.Executor,
        cost_to_go: CostToGo | None = None,
    ):
        self.model, self.encoder, self.metric, self.stats = model, encoder, metric, stats
        self.cost_to_go, self.model_thread = cost_to_go, model_thread
        self.seconds_per_atom: float | None = None  # what the last chunk took to embed (`_chunks`)
        # the prediction for each parent asked for by `tie_distances`, by the parent's id, most recent last
        self._tie_targets: collections.OrderedDict[int, tuple[weakref.ref[Node], np.ndarray]]
        self._tie_targets = collections.OrderedDict()

    def _predict(
        self, states: np.ndarray, goals: np.ndarray, carry: Any, started: threading.Event
    ) -> tuple[np.ndarray, Any]:
        started.set()
        t0 = time.perf_counter()
        targets, carry = self.model.predict_next(states, goals, carry)
        targets = np.asarray(targets, dtype=np.float32)
        carry = jax.tree_util.tree_map(np.asarray, carry)  # host rows: slicing per node is then free
        self.stats.add("model", time.perf_counter() - t0)
        return targets, carry

    def _chunks(self, pairs: Sequence[tuple[Task, State]]) -> Iterator[tuple[int, int]]:
        """(first, last) rows of each chunk of `pairs` to embed in one call: at most `CHUNK_STATES` states,
        `CHUNK_ATOMS` atoms and, at the pace of the chunk before, `CHUNK_SECONDS` (`FIRST_CHUNK_ATOMS` before)."""
        first = 0
        while first < len(pairs):
            pace = self.seconds_per_atom
            bound = min(CHUNK_ATOMS, FIRST_CHUNK_ATOMS if pace is None else CHUNK_SECONDS / max(pace, 1e-12))
            last, atoms = first, 0
            while last < len(pairs) and last - first < CHUNK_STATES:
                task, state = pairs[last]
                size = len(task.static) + len(task.goal) + len(state)
                if last > first and atoms + size > bound:
                    break
                atoms += size
                last += 1
            started = time.perf_counter()
            yield first, last
            self.seconds_per_atom = (time.perf_counter() - started) / max(atoms, 1)
            first = last

    def _embeddings(self, nodes: Sequence[tuple[Problem, Node]]) -> list[np.ndarray]:
        """The nodes' embeddings; one not kept is embedded again (from its parent's state, as when it was made)."""
        missing = [(problem, node) for problem, node in nodes if node.embedding is None]
        if missing:
            t0 = time.perf_counter()
            pairs = [(problem.task, node.state) for problem, node in missing]
            parents = [node.parent.state if node.parent is not None else None for _, node in missing]
            for (_, node), row in zip(missing, np.asarray(self.encoder.embed(pairs, parents), np.float32)):
                node.embedding = row
            self.stats.add("embedding", time.perf_counter() - t0)
        return [node.embedding for _, node in nodes if node.embedding is not None]

    def expand(
        self,
        requests: Sequence[tuple[Problem, Node, Container[State]]],
        predict: bool = True,
        defer: bool = False,
        interrupt: Interrupt | None = None,
        estimated: Sequence[Container[str] | None] | None = None,
    ) -> list[Expansion | None]:
        """Expand each (problem, node, states to skip) request; one Expansion per request, in order.
        `predict=False` (a stateless model whose distances only break ties: `tie_distances`): no model call.
        `defer=True` (lazy evaluation, with a cost-to-go): the successors are not estimated, each takes the
        cost-to-go of the node expanded, estimated now (`own_values`); they are embedded only for the model.
        `interrupt` is asked after every `CHUNK_STATES` new states, also within one node's successors, and between
        chunks; the requests of the problems it ends get None, and their remaining states are neither built nor
        embedded. `estimated`, per request: the actions whose children the cost-to-go estimates (None: all); the
        others get NaN, and a state no request estimates gets no cost-to-go features."""
        if not requests:
            return []
        # 1. One model call for every node, in the model thread while 2 and 3 run here.
        goals = np.stack([problem.goal for problem, _, _ in requests])
        prediction = None
        if predict:
            states = np.stack(self._embeddings([(problem, node) for problem, node, _ in requests]))
            carry = stack_carries([node.carry for _, node, _ in requests])
            started = threading.Event()
            prediction = self.model_thread.submit(self._predict, states, goals, carry, started)
            started.wait()  # hand the GIL over, or the model would start only after steps 2 and 3 (module docstring)

        # 2. Successors not to be skipped; each distinct state of an instance is embedded once. Where the search
        # keeps packed states, a successor is its key until its state is read (`_NewStates`).
        t0 = time.perf_counter()
        stopped: set[Problem] = set()
        successors_of: dict[Problem, int] = {}  # what `interrupt` weighs
        checked = 0  # new states when `interrupt` was last asked
        new = _NewStates()
        actions: list[list[str]] = []  # per request
        operators: list[list[Operator]] = []  # per request
        keys: list[list[Key] | None] = []  # per request, where its search keeps packed states
        rows: list[list[int]] = []  # per request, per candidate: its row in `new`
        chosen: list[list[bool]] = []  # per request, per candidate: whether it is estimated
        restricted = estimated is not None and any(helpful is not None for helpful in estimated)
        wanted: list[bool] = []  # per new state: whether some request estimates it (only where `restricted`)
        rows_of: dict[int, dict[State | Key, int]] = {}  # per problem, its new states' rows by state or key
        for request, (problem, node, skip) in enumerate(requests):
            helpful = estimated[request] if estimated is not None else None
            row_of = rows_of.setdefault(id(problem), {})
            names, ops, rows_of_request, chosen_of_request = [], [], [], []
            packed = skip if isinstance(skip, PackedStates) else None  # the search keeps packed states
            packer = None if packed is None else packed.packer
            keys_of_request: list[Key] | None = None if packed is None else []
            found: Iterator[tuple[Operator, State | Key]] = iter(())
            if problem not in stopped:
                successors = problem.generator
                found = (
                    successors.each_successor(node.state, skip)
                    if packed is None
                    else successors.each_successor_key(node.state, packed)
                )
            before = successors_of.get(problem, 0)
            for op, child in found:
                row = row_of.get(child)
                if row is None:
                    row = row_of[child] = new.add(problem, node.state, op, child, packer)
                    wanted.append(False)
                estimate = helpful is None or op.name in helpful
                wanted[row] = wanted[row] or estimate
                chosen_of_request.append(estimate)
                names.append(op.name)
                ops.append(op)
                if keys_of_request is not None:
                    keys_of_request.append(child)  # type: ignore[arg-type]  # a key, as `packer` tells
                rows_of_request.append(row)
                if interrupt is not None and len(new) - checked >= CHUNK_STATES:  # one node's successors may not fit
                    successors_of[problem] = before + len(ops)
                    stopped.update(interrupt(successors_of))
                    checked = len(new)
                    if problem in stopped:
                        break
            actions.append(names)
            operators.append(ops)
            keys.append(keys_of_request)
            rows.append(rows_of_request)
            chosen.append(chosen_of_request)
            successors_of[problem] = before + len(ops)
        self.stats.add("successors", time.perf_counter() - t0)

        # 3. The embeddings of all new states of all nodes, a chunk at a time; none where only the model would
        # read them and it is not called (a cost-to-go with a φ of its own, distances only where they break
        # ties, or deferred). 3b. The cost-to-go's features: the same embeddings, or its own embedding (of the
        # states estimated).
        embed = predict or (not defer and (self.cost_to_go is None or self.cost_to_go.reads_model_embedding))
        own_features = self.cost_to_go is not None and not defer
        todo = [row for row in range(len(new)) if wanted[row]] if restricted and not embed else range(len(new))
        parts: list[np.ndarray] = []
        feature_parts: list[np.ndarray] = []
        kept: list[int] = []  # the rows of `new` embedded, in order
        featured: list[int] = []  # the rows of `new` with the cost-to-go's own features, in order
        for first, last in self._chunks([new.pair(row) for row in todo]) if embed or own_features else ():
            chunk = [row for row in todo[first:last] if new.owners[row] not in stopped]
            if chunk:
                kept += chunk
                embedded_chunk = None
                if embed:
                    t0 = time.perf_counter()
                    embedded_chunk = np.asarray(
                        self.encoder.embed([new.pair(row) for row in chunk], [new.parents[row] for row in chunk]),
                        np.float32,
                    )
                    parts.append(embedded_chunk)
                    self.stats.add("embedding", time.perf_counter() - t0)
                picks = [i for i, row in enumerate(chunk) if wanted[row]] if restricted else range(len(chunk))
                if self.cost_to_go is not None and own_features and picks:
                    t0 = time.perf_counter()
                    own = [chunk[i] for i in picks]
                    featured += own
                    given = embedded_chunk if embedded_chunk is None or not restricted else embedded_chunk[picks]
                    feature_parts.append(
                        self.cost_to_go.embed([new.pair(row) for row in own], [new.parents[row] for row in own], given)
                    )
                    self.stats.add("cost_to_go", time.perf_counter() - t0)
            if interrupt is not None and last < len(todo):  # after the last one, the caller checks
                stopped.update(interrupt(successors_of))
        embedded = _stacked(parts, self.encoder.dim) if embed else None

        # The requests of problems ended keep no candidate; the others' rows are numbered as embedded.
        ended = [problem in stopped for problem, _, _ in requests]
        for request in range(len(requests)) if stopped else ():
            if ended[request]:
                actions[request], operators[request], rows[request], chosen[request] = [], [], [], []
                keys[request] = None if keys[request] is None else []
        pair_rows = np.asarray([row for rows_of_request in rows for row in rows_of_request], np.int64)
        estimates = np.asarray([flag for chosen_of_request in chosen for flag in chosen_of_request], bool)

        def numbered(done: list[int]) -> np.ndarray:
            """Each candidate's row among the rows `done` (in that order)."""
            if len(done) == len(new):
                return pair_rows
            position = np.full(len(new), -1, np.int64)
            position[done] = np.arange(len(done))
            return position[pair_rows]

        rows_index = numbered(kept) if embed else pair_rows
        features = _stacked(feature_parts, 0) if own_features else None  # the cost-to-go's, wherever it estimates

        # 4. Distances (and cost-to-go estimates) of every candidate to its node's prediction, in one call.
        t0 = time.perf_counter()
        counts = [len(names) for names in actions]
        owner = np.repeat(np.arange(len(requests)), counts)
        candidates = None if embedded is None else embedded[rows_index]
        dist, carry, t1 = None, None, t0
        if prediction is not None:
            assert candidates is not None  # a predicted expansion is embedded
            targets, carry = prediction.result()
            t1 = time.perf_counter()
            self.stats.add("model_wait", t1 - t0)
            dist = scoring.distances(targets[owner], candidates, self.metric)
        t2 = time.perf_counter()
        self.stats.add("distances", t2 - t1)
        values = None
        if defer:  # each child inherits its node's own estimate
            values = np.repeat(self.own_values([(problem, node) for problem, node, _ in requests], goals), counts)
        elif self.cost_to_go is not None:
            values = np.full(len(pair_rows), np.nan, np.float32)
            if estimates.any():
                assert features is not None  # estimated without deferring: `own_features`
                picked = numbered(featured)[estimates]
                values[estimates] = self.cost_to_go.estimate(features[picked], goals[owner[estimates]])
            self.stats.add("cost_to_go", time.perf_counter() - t2)
        self.stats.add("expanded", len(requests) - sum(ended))
        self.stats.add("generated", len(pair_rows))

        expansions: list[Expansion | None] = []
        offset = 0
        for i, ((_, node, _), names, rows_of_request) in enumerate(zip(requests, actions, rows)):
            end = offset + len(names)
            expansions.append(
                None
                if ended[i]
                else Expansion(
                    node=node,
                    actions=names,
                    operators=operators[i],
                    keys=keys[i],
                    states=_Successors(new, rows_of_request),
                    embeddings=None if candidates is None else candidates[offset:end],
                    distances=None if dist is None else dist[offset:end],
                    values=None if values is None else values[offset:end],
                    carry=carry_row(carry, i),
                )
            )
            offset = end
        return expansions

    def own_values(self, nodes: Sequence[tuple[Problem, Node]], goals: np.ndarray) -> np.ndarray:
        """The cost-to-go of the nodes themselves, from the features `expand` gives them as children (embedded
        from their parents' states)."""
        assert self.cost_to_go is not None  # lazy evaluation defers a cost-to-go's estimates
        embedded = None
        if self.cost_to_go.reads_model_embedding:
            embedded = np.stack(self._embeddings(nodes))
        t0 = time.perf_counter()
        pairs = [(problem.task, node.state) for problem, node in nodes]
        parents = [node.parent.state if node.parent is not None else None for _, node in nodes]
        features = self.cost_to_go.embed(pairs, parents, embedded)
        values = np.asarray(self.cost_to_go.estimate(features, goals), dtype=np.float32)
        self.stats.add("cost_to_go", time.perf_counter() - t0)
        return values

    def tie_distances(self, problem: Problem, children: Sequence[tuple[Node, State]]) -> np.ndarray:
        """The distances of (parent node, child state) pairs to their parents' predictions, as `expand` computes
        them (row by row, so alike): for best-first search whose distances only break ties, computed only
        among the open nodes of equal priority. A parent's children tie again and again as the search goes
        on, so its prediction is kept (at most `TIE_TARGET_BYTES`); parents' embeddings are dropped again."""
        parents = list({id(parent): parent for parent, _ in children}.values())
        target_of = {id(parent): target for parent in parents if (target := self._kept_target(parent)) is not None}
        asked = [parent for parent in parents if id(parent) not in target_of]
        if asked:
            dropped = [parent for parent in asked if parent.embedding is None]
            states = np.stack(self._embeddings([(problem, parent) for parent in asked]))
            for parent in dropped:
                parent.embedding = None
            t0 = time.perf_counter()
            targets, _ = self.model.predict_next(states, np.repeat(problem.goal[None], len(asked), 0), None)
            self.stats.add("model", time.perf_counter() - t0)
            for parent, target in zip(asked, np.asarray(targets, dtype=np.float32)):
                target_of[id(parent)] = target
                self._keep_target(parent, target)
        t1 = time.perf_counter()
        pairs = [(problem.task, state) for _, state in children]
        embedded = np.asarray(self.encoder.embed(pairs, [parent.state for parent, _ in children]), np.float32)
        t2 = time.perf_counter()
        self.stats.add("embedding", t2 - t1)
        targets = np.stack([target_of[id(parent)] for parent, _ in children])
        distances = scoring.distances(targets, embedded, self.metric)
        self.stats.add("distances", time.perf_counter() - t2)
        return distances

    def _kept_target(self, parent: Node) -> np.ndarray | None:
        kept = self._tie_targets.get(id(parent))
        if kept is None or kept[0]() is not parent:  # a node gone, whose id came back
            return None
        self._tie_targets.move_to_end(id(parent))
        return kept[1]

    def _keep_target(self, parent: Node, target: np.ndarray) -> None:
        self._tie_targets[id(parent)] = (weakref.ref(parent), target)
        self._tie_targets.move_to_end(id(parent))
        while self._tie_targets and len(self._tie_targets) * target.nbytes > TIE_TARGET_BYTES:
            self._tie_targets.popitem(last=False)
