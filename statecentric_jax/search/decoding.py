"""Neuro-symbolic plan decoding (the paper's Algorithm 1 with beam search), batched.

At each step the model proposes a target embedding for every live beam element;
the true symbolic successors of each element are embedded and scored by their
distance to that element's target; each instance keeps its `beam_width` paths
with the lowest cumulative distance. Every plan is executable by construction.

`decode` runs all instances in lockstep: one model call for every live beam
element of every instance, one embedding call for all their candidates, and one
jit-compiled distance + top-k over padded [instances, beam, candidates] arrays
(sizes bucketed to powers of two so XLA compiles a handful of shapes).
`decode_sequential` is the direct, one-thing-at-a-time implementation kept as
the reference that `decode` must agree with.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from statecentric_jax.errors import InputError
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import Task

State = frozenset


class TransitionModel(Protocol):
    def init_carry(self, batch_size: int) -> Any: ...

    def predict_next(self, states: np.ndarray, goals: np.ndarray, carry: Any) -> tuple[np.ndarray, Any]: ...


class StateEncoder(Protocol):
    dim: int

    def embed(self, pairs: Sequence[tuple[Task, State]]) -> np.ndarray: ...

    def embed_goals(self, tasks: Sequence[Task]) -> np.ndarray: ...


@dataclasses.dataclass(frozen=True)
class DecodeConfig:
    beam_width: int = 3
    metric: str = "cosine"  # "cosine" (state-mode models) or "euclidean" (delta mode)
    horizon_base: int = 100
    horizon_per_object: int = 10
    max_in_flight: int = 256  # instances decoded together (bounds memory)

    def horizon(self, task: Task) -> int:
        """T_max = max(100, 10·|O|) with the paper's constants."""
        return max(self.horizon_base, self.horizon_per_object * len(task.objects))


@dataclasses.dataclass
class DecodeResult:
    problem: str
    problem_file: str
    num_objects: int
    solved: bool
    plan: list[str]
    steps: int
    seconds: float
    outcome: str  # "goal", "horizon", "dead end", or "cannot encode: <reason>"


@dataclasses.dataclass
class DecodeStats:
    """Where decoding time went (seconds)."""

    model: float = 0.0
    successors: float = 0.0
    embedding: float = 0.0
    distances: float = 0.0
    total: float = 0.0

    def add(self, field: str, seconds: float) -> None:
        setattr(self, field, getattr(self, field) + seconds)


@dataclasses.dataclass
class _Path:
    """One beam element: a path from the initial state."""

    state: State
    embedding: np.ndarray  # φ(state), reused as the next model input
    actions: tuple | None  # linked list (action, parent's actions): no plan copies
    visited: set  # states on this path (a successor visited before is skipped)
    score: float  # sum of step distances


@dataclasses.dataclass
class _Instance:
    index: int
    task: Task
    generator: SuccessorGenerator
    goal: np.ndarray
    horizon: int
    started: float
    beam: list[_Path]
    steps: int = 0


def _unroll(actions: tuple | None) -> list[str]:
    plan = []
    while actions is not None:
        action, actions = actions
        plan.append(action)
    return plan[::-1]


def _bucket(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(n, 1))))


def _pair_distances(targets: jax.Array, candidates: jax.Array, metric: str) -> jax.Array:
    """Distances between targets [..., D] and candidates [..., C, D] -> [..., C]."""
    if metric == "cosine":
        dots = jnp.einsum("...d,...cd->...c", targets, candidates)
        norms = jnp.linalg.norm(targets, axis=-1)[..., None] * jnp.linalg.norm(candidates, axis=-1)
        return 1.0 - dots / jnp.maximum(norms, 1e-12)
    if metric == "euclidean":
        return jnp.linalg.norm(candidates - targets[..., None, :], axis=-1)
    raise InputError(None, f"unknown decoding metric '{metric}' (use 'cosine' or 'euclidean')")


@functools.partial(jax.jit, static_argnames=("metric", "k"))
def _select(targets, candidates, mask, scores, *, metric: str, k: int):
    """Per-instance top-k over all candidates of all beam elements.

    targets [I, W, D]; candidates [I, W, C, D]; mask [I, W, C]; scores [I, W]
    cumulative. Returns the k best cumulative scores [I, k] and their flat
    indices into W*C (ties: lower index first).
    """
    distances = _pair_distances(targets, candidates, metric)
    total = jnp.where(mask, scores[..., None] + distances, jnp.inf)
    neg_best, index = jax.lax.top_k(-total.reshape(total.shape[0], -1), k)
    return -neg_best, index


def _start(index: int, task: Task, encoder: StateEncoder, config: DecodeConfig) -> _Instance | DecodeResult:
    started = time.perf_counter()
    try:
        goal = encoder.embed_goals([task])[0]
        initial = encoder.embed([(task, task.init)])[0]
    except InputError as e:
        return DecodeResult(
            task.name, task.problem_file, len(task.objects), False, [], 0, 0.0, f"cannot encode: {e.reason}"
        )
    inst = _Instance(index, task, SuccessorGenerator(task), goal, config.horizon(task), started, [])
    inst.beam.append(_Path(task.init, initial, None, {task.init}, 0.0))
    return inst


def _finish(inst: _Instance, outcome: str, path: _Path | None) -> DecodeResult:
    return DecodeResult(
        problem=inst.task.name,
        problem_file=inst.task.problem_file,
        num_objects=len(inst.task.objects),
        solved=outcome == "goal",
        plan=_unroll(path.actions) if path is not None else [],
        steps=inst.steps,
        seconds=time.perf_counter() - inst.started,
        outcome=outcome,
    )


def _outcome(inst: _Instance, previous_best: _Path | None = None) -> tuple[str, _Path | None] | None:
    """Why the instance stops after its latest step, if it does (with the path to report)."""
    goal_path = next((p for p in inst.beam if inst.task.goal_reached(p.state)), None)
    if goal_path is not None:
        return "goal", goal_path
    if not inst.beam:
        return "dead end", previous_best
    if inst.steps >= inst.horizon:
        return "horizon", inst.beam[0]
    return None


def _rows(tree: Any, rows: Sequence[int]) -> Any:
    index = np.asarray(rows, dtype=np.int32)
    return jax.tree_util.tree_map(lambda x: x[index], tree)


def _concat(a: Any, b: Any) -> Any:
    return jax.tree_util.tree_map(lambda x, y: jnp.concatenate([x, y]), a, b)


def decode(
    tasks: Sequence[Task],
    model: TransitionModel,
    encoder: StateEncoder,
    config: DecodeConfig = DecodeConfig(),
    on_result: Callable[[DecodeResult], None] | None = None,
    stats: DecodeStats | None = None,
) -> list[DecodeResult]:
    """Decode every task in lockstep; results come back in the order of `tasks`."""
    stats = stats if stats is not None else DecodeStats()
    t_begin = time.perf_counter()
    results: list[DecodeResult | None] = [None] * len(tasks)

    def finish(index: int, result: DecodeResult) -> None:
        results[index] = result
        if on_result is not None:
            on_result(result)

    pending = collections.deque(range(len(tasks)))
    active: list[_Instance] = []
    carry = None  # model carry, one row per path of `active` in order (None: stateless model)
    k = config.beam_width
    while pending or active:
        admitted = []
        while pending and len(active) + len(admitted) < config.max_in_flight:
            i = pending.popleft()
            started = _start(i, tasks[i], encoder, config)
            if isinstance(started, DecodeResult):
                finish(i, started)
            elif (stop := _outcome(started)) is not None:
                finish(i, _finish(started, *stop))
            else:
                admitted.append(started)
        if admitted:
            fresh = model.init_carry(len(admitted))
            carry = fresh if carry is None or not active else _concat(carry, fresh)
            active.extend(admitted)
        if not active:
            continue
        paths = [p for inst in active for p in inst.beam]

        # 1. One model call for every live path of every instance.
        t0 = time.perf_counter()
        goals = np.stack([inst.goal for inst in active for _ in inst.beam])
        targets, carry = model.predict_next(np.stack([p.embedding for p in paths]), goals, carry)
        targets = np.asarray(targets, dtype=np.float32)
        stats.add("model", time.perf_counter() - t0)

        # 2. Successors not yet visited on each path; each distinct state is embedded once.
        t0 = time.perf_counter()
        pairs, options_of = [], []  # states to embed; per path [(action, state, row)]
        for inst in active:
            row_of: dict[State, int] = {}
            for path in inst.beam:
                options = []
                for op, nxt in inst.generator.successors(path.state):
                    if nxt not in path.visited:
                        row = row_of.setdefault(nxt, len(pairs))
                        if row == len(pairs):
                            pairs.append((inst.task, nxt))
                        options.append((op.name, nxt, row))
                options_of.append(options)
        stats.add("successors", time.perf_counter() - t0)

        # 3. One embedding call for all candidates of all instances.
        t0 = time.perf_counter()
        embedded = encoder.embed(pairs) if pairs else np.zeros((0, encoder.dim), np.float32)
        stats.add("embedding", time.perf_counter() - t0)

        # 4. Distances and per-instance top-k: one jit call over padded arrays whose
        # sizes are bucketed (powers of two, at least 8) so XLA compiles few shapes.
        t0 = time.perf_counter()
        n_inst = max(8, _bucket(len(active)))
        n_cand = max(8, _bucket(max((len(o) for o in options_of), default=1)))
        table = np.zeros((len(pairs) + 1, encoder.dim), np.float32)  # row 0: padding
        table[1:] = embedded
        cand_rows = np.zeros((n_inst, k, n_cand), np.int32)
        mask = np.zeros((n_inst, k, n_cand), bool)
        tgt = np.zeros((n_inst, k, encoder.dim), np.float32)
        scores = np.zeros((n_inst, k), np.float32)
        slots = [(i, w) for i, inst in enumerate(active) for w in range(len(inst.beam))]
        for flat, (i, w) in enumerate(slots):
            tgt[i, w] = targets[flat]
            scores[i, w] = paths[flat].score
            options = options_of[flat]
            cand_rows[i, w, : len(options)] = [row + 1 for _, _, row in options]
            mask[i, w, : len(options)] = True
        best, index = _select(tgt, table[cand_rows], mask, scores, metric=config.metric, k=k)
        best, index = np.asarray(best), np.asarray(index)
        stats.add("distances", time.perf_counter() - t0)

        # 5. New beams; finished instances leave the batch; carries follow their parents.
        first_flat = {}
        for flat, (i, _) in enumerate(slots):
            first_flat.setdefault(i, flat)
        still_active, parent_rows = [], []
        children = collections.Counter()
        for i, inst in enumerate(active):
            new_beam, parents = [], []
            for score, flat_index in zip(best[i], index[i]):
                if not np.isfinite(score):
                    break
                w, c = divmod(int(flat_index), n_cand)
                flat = first_flat[i] + w
                action, nxt, row = options_of[flat][c]
                parent = paths[flat]
                children[flat] += 1  # the first child takes over its parent's visited set
                visited = parent.visited if children[flat] == 1 else set(parent.visited)
                new_beam.append(_Path(nxt, embedded[row], (action, parent.actions), visited, float(score)))
                parents.append(flat)
            for path in new_beam:
                path.visited.add(path.state)
            previous_best, inst.beam = inst.beam[0], new_beam
            inst.steps += 1
            stop = _outcome(inst, previous_best)
            if stop is not None:
                finish(inst.index, _finish(inst, *stop))
                continue
            still_active.append(inst)
            parent_rows.extend(parents)
        active = still_active
        if carry is not None and active:
            carry = _rows(carry, parent_rows)
    stats.add("total", time.perf_counter() - t_begin)
    return results  # type: ignore[return-value]


def _numpy_distance(target: np.ndarray, candidate: np.ndarray, metric: str) -> np.float32:
    if metric == "cosine":
        norms = np.float32(np.linalg.norm(target) * np.linalg.norm(candidate))
        return np.float32(1.0) - np.float32(target @ candidate) / max(norms, np.float32(1e-12))
    return np.float32(np.linalg.norm(candidate - target))


def decode_sequential(
    tasks: Sequence[Task],
    model: TransitionModel,
    encoder: StateEncoder,
    config: DecodeConfig = DecodeConfig(),
    stats: DecodeStats | None = None,
) -> list[DecodeResult]:
    """Reference decoder: one instance at a time, one model call per beam element,
    one embedding call per candidate, as a direct implementation of Algorithm 1."""
    stats = stats if stats is not None else DecodeStats()
    t_begin = time.perf_counter()
    results = []
    for index, task in enumerate(tasks):
        inst = _start(index, task, encoder, config)
        if isinstance(inst, DecodeResult):
            results.append(inst)
            continue
        carries = [model.init_carry(1)]
        stop = _outcome(inst)
        while stop is None:
            pool = []  # (score, beam slot, candidate order, path, carry)
            for w, (path, carry) in enumerate(zip(inst.beam, carries)):
                t0 = time.perf_counter()
                target, carry = model.predict_next(path.embedding[None], inst.goal[None], carry)
                target = np.asarray(target, dtype=np.float32)[0]
                stats.add("model", time.perf_counter() - t0)
                t0 = time.perf_counter()
                successors = [(op, s) for op, s in inst.generator.successors(path.state) if s not in path.visited]
                stats.add("successors", time.perf_counter() - t0)
                for c, (op, nxt) in enumerate(successors):
                    t0 = time.perf_counter()
                    embedding = encoder.embed([(task, nxt)])[0]
                    stats.add("embedding", time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    score = np.float32(path.score) + _numpy_distance(target, embedding, config.metric)
                    stats.add("distances", time.perf_counter() - t0)
                    child = _Path(nxt, embedding, (op.name, path.actions), path.visited | {nxt}, float(score))
                    pool.append((score, w, c, child, carry))
            pool.sort(key=lambda entry: entry[:3])
            previous_best, inst.beam = inst.beam[0], [entry[3] for entry in pool[: config.beam_width]]
            carries = [entry[4] for entry in pool[: config.beam_width]]
            inst.steps += 1
            stop = _outcome(inst, previous_best)
        results.append(_finish(inst, *stop))
    stats.add("total", time.perf_counter() - t_begin)
    return results
