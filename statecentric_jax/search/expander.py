"""The strategy-independent half of decoding: expand a batch of search nodes at once.

For every node to expand, across all instances being decoded, the expander calls the
transition model once (one batched `predict_next`), enumerates the true symbolic
successors, embeds each distinct new state of an instance once (one batched `embed`),
and computes every candidate's distance to its node's prediction in one jit call over
padded [nodes, candidates, D] arrays. Strategies (beam, best-first, ...) decide which
nodes to expand and what to keep; they never call the model or the encoder themselves.

A node stores the model carry it is expanded with (a pytree row; None for stateless
models), so any strategy can expand any node in any order with either model kind.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Container, Sequence
from typing import Any, Protocol

import jax
import numpy as np

from statecentric_jax.embedding.encoders import StateEncoder
from statecentric_jax.learning.transitions import TransitionModel
from statecentric_jax.padding import next_power_of_two
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import Task
from statecentric_jax.search import scoring

State = frozenset


class CostToGo(Protocol):
    """A learned estimate of the remaining plan length from state and goal embeddings."""

    def estimate(self, states: np.ndarray, goals: np.ndarray) -> np.ndarray: ...


@dataclasses.dataclass(eq=False)
class Node:
    """A search node: a state reached by a plan from the initial state."""

    state: State
    embedding: np.ndarray  # φ(state), the model's next input
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
    states: list[State]
    embeddings: np.ndarray  # [C, D]
    distances: np.ndarray  # [C] float32, to the model's prediction for `node`
    values: np.ndarray | None  # [C] cost-to-go estimates, when a cost-to-go model is given
    carry: Any  # the carry the children are expanded with

    def child(self, index: int, score: float) -> Node:
        return Node(
            self.states[index],
            self.embeddings[index],
            (self.actions[index], self.node.plan),
            self.node.depth + 1,
            score,
            self.carry,
            self.node,
        )


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


def stack_carries(carries: Sequence[Any]) -> Any:
    """One batch carry from per-node carries (each a batch of one); None for stateless models."""
    if carries[0] is None:
        return None
    return jax.tree_util.tree_map(lambda *rows: np.concatenate(rows), *carries)


def carry_row(carry: Any, row: int) -> Any:
    return None if carry is None else jax.tree_util.tree_map(lambda x: x[row : row + 1], carry)


class Expander:
    def __init__(
        self,
        model: TransitionModel,
        encoder: StateEncoder,
        metric: scoring.Metric,
        stats: DecodeStats,
        cost_to_go: CostToGo | None = None,
    ):
        self.model, self.encoder, self.metric, self.stats = model, encoder, metric, stats
        self.cost_to_go = cost_to_go

    def expand(self, requests: Sequence[tuple[Problem, Node, Container[State]]]) -> list[Expansion]:
        """Expand each (problem, node, states to skip) request; one Expansion per request, in order."""
        if not requests:
            return []
        # 1. One model call for every node.
        t0 = time.perf_counter()
        states = np.stack([node.embedding for _, node, _ in requests])
        goals = np.stack([problem.goal for problem, _, _ in requests])
        carry = stack_carries([node.carry for _, node, _ in requests])
        targets, carry = self.model.predict_next(states, goals, carry)
        targets = np.asarray(targets, dtype=np.float32)
        carry = jax.tree_util.tree_map(np.asarray, carry)  # host rows: slicing per node is then free
        self.stats.add("model", time.perf_counter() - t0)

        # 2. Successors not to be skipped; each distinct state of an instance is embedded once.
        t0 = time.perf_counter()
        pairs: list[tuple[Task, State]] = []
        options: list[list[tuple[str, State, int]]] = []  # per request: (action, state, row in `pairs`)
        rows_of: dict[int, dict[State, int]] = {}
        for problem, node, skip in requests:
            row_of = rows_of.setdefault(id(problem), {})
            found = []
            for op, nxt in problem.generator.successors(node.state):
                if nxt not in skip:
                    row = row_of.setdefault(nxt, len(pairs))
                    if row == len(pairs):
                        pairs.append((problem.task, nxt))
                    found.append((op.name, nxt, row))
            options.append(found)
        self.stats.add("successors", time.perf_counter() - t0)

        # 3. One embedding call for all candidates of all nodes.
        t0 = time.perf_counter()
        embedded = self.encoder.embed(pairs) if pairs else np.zeros((0, self.encoder.dim), np.float32)
        embedded = np.asarray(embedded, dtype=np.float32)
        self.stats.add("embedding", time.perf_counter() - t0)

        # 4. Distances: one jit call over padded [nodes, candidates, D] arrays.
        t0 = time.perf_counter()
        n_nodes = max(8, next_power_of_two(len(requests)))
        n_cand = max(8, next_power_of_two(max(len(o) for o in options)))
        table = np.zeros((len(pairs) + 1, self.encoder.dim), np.float32)  # row 0: padding
        table[1:] = embedded
        cand_rows = np.zeros((n_nodes, n_cand), np.int32)
        padded_targets = np.zeros((n_nodes, self.encoder.dim), np.float32)
        padded_targets[: len(requests)] = targets
        for i, found in enumerate(options):
            cand_rows[i, : len(found)] = [row + 1 for _, _, row in found]
        dist = np.asarray(scoring.distances(padded_targets, table[cand_rows], metric=self.metric))
        values = None
        if self.cost_to_go is not None and pairs:
            goal_rows = np.stack([requests[i][0].goal for i, found in enumerate(options) for _ in found])
            flat_rows = np.asarray([row for found in options for _, _, row in found], dtype=np.int64)
            flat_values = np.asarray(self.cost_to_go.estimate(embedded[flat_rows], goal_rows), dtype=np.float32)
        self.stats.add("distances", time.perf_counter() - t0)

        expansions, offset = [], 0
        for i, ((_, node, _), found) in enumerate(zip(requests, options)):
            rows = [row for _, _, row in found]
            if self.cost_to_go is not None:
                values = flat_values[offset : offset + len(found)] if pairs else np.zeros(0, np.float32)
                offset += len(found)
            expansions.append(
                Expansion(
                    node=node,
                    actions=[action for action, _, _ in found],
                    states=[state for _, state, _ in found],
                    embeddings=embedded[rows],
                    distances=dist[i, : len(found)].astype(np.float32),
                    values=values,
                    carry=carry_row(carry, i),
                )
            )
        return expansions
