"""The sequential reference decoder: Algorithm 1 with beam search, one thing at a time.

One instance at a time; per beam element one model call, then one embedding call and
one distance call for its successors. It shares no search code with `decoding.decode`
on purpose: the batched decoder with the `beam` strategy must return identical plans.
`paper_reference.paper_encoder` makes it the paper-faithful reference (wlplan, one call per candidate).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from statecentric_jax.collector import collector_paused
from statecentric_jax.embedding.encoders import StateEncoder
from statecentric_jax.learning.transitions import TransitionModel
from statecentric_jax.planning.tasks import Task
from statecentric_jax.search.base import DecodeConfig, DecodeResult, Outcome, finish, start
from statecentric_jax.search.expander import DecodeStats, Node
from statecentric_jax.search.scoring import distances


@collector_paused()
def decode_sequential(
    tasks: Sequence[Task],
    model: TransitionModel,
    encoder: StateEncoder,
    config: DecodeConfig = DecodeConfig(),
    stats: DecodeStats | None = None,
) -> list[DecodeResult]:
    stats = stats if stats is not None else DecodeStats()
    t_begin = time.perf_counter()
    results = []
    for index, task in enumerate(tasks):
        inst = start(index, task, model, encoder, config)
        if isinstance(inst, DecodeResult):
            results.append(inst)
            continue
        beam = [(inst.root, {inst.root.state})]
        outcome, reported = (Outcome.GOAL, inst.root) if task.goal_reached(task.init) else (None, None)
        generator = inst.problem.generator
        while outcome is None:
            pool = []  # (score, beam slot, candidate order, node, visited)
            for w, (node, visited) in enumerate(beam):
                assert node.embedding is not None  # this reference embeds every node it makes
                t0 = time.perf_counter()
                target, carry = model.predict_next(node.embedding[None], inst.problem.goal[None], node.carry)
                target = np.asarray(target, dtype=np.float32)
                stats.add("model", time.perf_counter() - t0)
                t0 = time.perf_counter()
                successors = [(op, s) for op, s in generator.successors(node.state) if s not in visited]
                stats.add("successors", time.perf_counter() - t0)
                if not successors:
                    continue
                t0 = time.perf_counter()
                embeddings = encoder.embed([(task, nxt) for _, nxt in successors], [node.state] * len(successors))
                stats.add("embedding", time.perf_counter() - t0)
                t0 = time.perf_counter()
                scores = np.float32(node.score) + distances(
                    np.repeat(target, len(successors), 0), embeddings, config.metric
                )
                stats.add("distances", time.perf_counter() - t0)
                for c, ((op, nxt), embedding, score) in enumerate(zip(successors, embeddings, scores)):
                    child = Node(nxt, embedding, (op.name, node.plan), node.depth + 1, float(score), carry)
                    pool.append((score, w, c, child, visited | {nxt}))
            pool.sort(key=lambda entry: entry[:3])
            previous_best, beam = beam[0][0], [(entry[3], entry[4]) for entry in pool[: config.beam_width]]
            inst.steps += 1
            goal = next((node for node, _ in beam if task.goal_reached(node.state)), None)
            if goal is not None:
                outcome, reported = Outcome.GOAL, goal
            elif not beam:
                outcome, reported = Outcome.DEAD_END, previous_best
            elif inst.steps >= inst.horizon:
                outcome, reported = Outcome.HORIZON, beam[0][0]
        results.append(finish(inst, outcome, reported))
    stats.add("total", time.perf_counter() - t_begin)
    return results
