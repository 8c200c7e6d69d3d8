"""Plans: read and write IPC plan files, and replay a plan to validate it.

Replaying is how trajectories s_0..s_T are obtained and how every decoded plan is
checked: a plan either yields its state trajectory or a PlanError that says which
step fails and why.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import Task, normalize_action


class PlanError(InputError):
    """A plan that is not executable or does not reach the goal."""

    def __init__(self, path: str | None, reason: str, step: int | None = None, missing: Iterable[str] = ()):
        self.step = step
        self.missing = tuple(sorted(missing))
        super().__init__(path, reason)


def read_plan(path: str | os.PathLike) -> list[str]:
    """Actions of an IPC plan file; ';' starts a comment."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(path, f"cannot read plan ({e.strerror or e})") from None
    actions = []
    for lineno, line in enumerate(lines, 1):
        text = line.split(";", 1)[0].strip()
        if not text:
            continue
        if not (text.startswith("(") and text.endswith(")")):
            raise InputError(path, f"line {lineno} is not an action '(name args...)': {text!r}")
        actions.append(normalize_action(text))
    return actions


def format_plan(actions: Sequence[str]) -> str:
    """IPC plan text: one action per line and a unit-cost comment."""
    return "".join(f"{a}\n" for a in actions) + f"; cost = {len(actions)} (unit cost)\n"


def write_plan(path: str | os.PathLike, actions: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(format_plan(actions))


def simulate(
    task: Task, actions: Sequence[str], source: str | None = None, require_goal: bool = True
) -> list[frozenset[str]]:
    """Replay `actions` from the initial state and return s_0..s_T (fluent atoms).

    Raises PlanError naming the step (1-based), the action and the failing
    preconditions, or, if `require_goal`, the goal atoms still missing at the end.
    `source` is the plan's file name for the error message.
    """
    state = task.init
    trajectory = [state]
    for step, action in enumerate(actions, 1):
        op = task.operator(action)
        if op is None:
            raise PlanError(
                source,
                f"step {step}: {action} is not a ground action of {task.problem_file}"
                " (unknown action or object, or a static precondition is false)",
                step,
            )
        missing = op.pre - state
        violated = op.pre_neg & state
        if missing or violated:
            unmet = sorted(missing) + [f"(not {atom})" for atom in sorted(violated)]
            raise PlanError(
                source,
                f"step {step}: {op.name} is not applicable: precondition(s) {' '.join(unmet)} false",
                step,
                unmet,
            )
        state = op.apply(state)
        trajectory.append(state)
    missing_goal = task.missing_goal(state)
    if require_goal and missing_goal:
        raise PlanError(
            source,
            f"goal not reached after {len(actions)} steps: missing {' '.join(sorted(missing_goal))}",
            None,
            missing_goal,
        )
    return trajectory
