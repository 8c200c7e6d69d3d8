"""Greedy action elimination: drop the steps a valid plan does not need.

Decoding follows true successors, so its plans are valid, but they may carry detours: a truck
driven somewhere it never loads, a package loaded and unloaded again. For each step in turn, the
plan is replayed without it and without every later step whose preconditions that leaves unmet; if
the goal still holds at the end, those steps go (Fink and Yang 1992; Nakhost and Müller 2010). Passes
repeat until none removes a step, so in the result no step can be dropped that way. It is a
subsequence of the plan, so it is valid in the same task and never longer. With a deadline (a search's
time limit), it stops there with the steps it has kept so far: a valid plan all the same.

It reads only the plan and the task, not the learned models: symbolic post-processing, which
`decode.action_elimination` turns on (`search/decoding.py`) and whose runs are rows of their own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.tasks import Task


def eliminate_actions(task: Task, plan: Sequence[str], deadline: float | None = None) -> list[str]:
    """`plan`'s steps that the goal needs (a plan for `task`: PlanError otherwise), in their order; by
    `deadline` (a `time.perf_counter()` value), those kept so far."""
    states = simulate(task, plan)  # s_0 .. s_T; states[i] is the state before step i
    steps = [(action, task.operator(action)) for action in plan]
    removed = True
    while removed:
        removed = False
        step = 0
        while step < len(steps):
            if deadline is not None and time.perf_counter() >= deadline:
                return [action for action, _ in steps]
            kept, after, state = [], [], states[step]
            for action, op in steps[step + 1 :]:
                assert op is not None  # simulate checked every step
                if op.applicable(state):
                    state = op.apply(state)
                    kept.append((action, op))
                    after.append(state)
            if task.goal_reached(state):
                steps[step:] = kept
                states[step + 1 :] = after
                removed = True
            else:
                step += 1
    return [action for action, _ in steps]
