"""Tiny Blocksworld problems, an injective atom encoder and an oracle model, for search tests."""

import pathlib

import numpy as np

from statecentric_jax.errors import InputError
from statecentric_jax.planning.plans import simulate

DOMAIN = (pathlib.Path(__file__).resolve().parents[2] / "data/domains/blocks/domain.pddl").read_text()


def problem(name, blocks, goal):
    init = " ".join(f"(clear {b}) (ontable {b})" for b in blocks)
    return (
        f"(define (problem {name}) (:domain blocks) (:objects {' '.join(blocks)})"
        f" (:init {init} (handempty)) (:goal (and {goal})))"
    )


PROBLEMS = {
    "p3": (["a", "b", "c"], "(on a b) (on b c)"),
    "p4": (["a", "b", "c", "d"], "(on d c) (on c b) (on b a)"),
    "p2": (["a", "b"], "(on b a)"),
}
PLANS = {
    "p3": ["(pick-up b)", "(stack b c)", "(pick-up a)", "(stack a b)"],
    "p4": ["(pick-up b)", "(stack b a)", "(pick-up c)", "(stack c b)", "(pick-up d)", "(stack d c)"],
    "p2": ["(pick-up b)", "(stack b a)"],
}


class AtomEncoder:
    """Injective test encoder: one dimension per atom string seen so far (static vocabulary)."""

    def __init__(self, max_objects=10):
        blocks = "abcdefghij"
        atoms = ["(handempty)"] + [f"({p} {x})" for p in ("ontable", "clear", "holding") for x in blocks]
        atoms += [f"(on {x} {y})" for x in blocks for y in blocks]
        self.index = {a: i for i, a in enumerate(atoms)}
        self.dim = len(atoms)
        self.max_objects = max_objects

    def _vector(self, task, atoms):
        if len(task.objects) > self.max_objects:
            raise InputError(task.problem_file, f"{len(task.objects)} objects exceed the encoder's {self.max_objects}")
        v = np.zeros(self.dim, np.float32)
        v[[self.index[a] for a in atoms]] = 1.0
        return v

    def embed(self, pairs):
        return np.stack([self._vector(task, state) for task, state in pairs])

    def embed_goals(self, tasks):
        return np.stack([self._vector(task, task.goal) for task in tasks])


class OracleModel:
    """Predicts φ(s_{t+1}) of a known plan, using the carry as the step counter
    (so a wrong carry bookkeeping in the decoder breaks the plan)."""

    def __init__(self, encoder, tasks, plans, delta=False):
        self.delta = delta
        self.next_of = {}
        for task in tasks:
            goal = encoder.embed_goals([task])[0].tobytes()
            states = encoder.embed([(task, s) for s in simulate(task, plans[task.name])])
            self.next_of[goal] = states

    def init_carry(self, batch_size):
        return np.zeros((batch_size,), np.int32)

    def predict_next(self, states, goals, carry):
        targets = np.stack(
            [self.next_of[g.tobytes()][min(t + 1, len(self.next_of[g.tobytes()]) - 1)] for g, t in zip(goals, carry)]
        )
        return targets, carry + 1
