"""Goal agenda: decode a problem a few goals at a time, each stage in a smaller task.

With `decode.goal_agenda = k`, stage i searches, with the configured strategy and model, from
the state where stage i - 1 ended, for the goals that hold there plus the next k (the goal
atoms in sorted order, so reruns agree), in the task restricted to what is relevant to that
stage's goal (`planning/relevance.py`). The stages' plans, joined, are the problem's plan; it is
checked against the full task like any other. Goals that hold are part of every later stage's
goal, so a stage never undoes them for good; their operators stay in the stage's task only when
the new goal's operators may undo them (`restrict`'s `kept`): a delivered Logistics package drops
out of the later stages, a built Blocks tower does not. This is the goal agenda of classical planners
(Koehler and Hoffmann 2000), a symbolic decomposition: the learned model still orders every
expansion, but it does so in a task that holds only one more goal's worth of the problem. It is
reported as its own row beside the searches on the whole goal.

The node budget (`decode.budget`) and the horizon are the problem's: each stage gets what the
earlier ones left. The paper's decoder and every setting with `goal_agenda = 0` decode the whole goal in one stage.
"""

from __future__ import annotations

import dataclasses
import time

from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.relevance import restrict
from statecentric_jax.planning.tasks import Task
from statecentric_jax.search.base import DecodeConfig, DecodeResult, Outcome


class Agenda:
    """One problem's stages: the task of the next one, and the plan of those done."""

    def __init__(self, task: Task, goals_per_stage: int):
        self.task, self.goals_per_stage = task, goals_per_stage
        self.state = task.init
        self.plan: list[str] = []
        self.steps = self.expanded = self.stages = self.estimates_at_most_zero = 0
        self.started = time.perf_counter()

    def stage_task(self) -> Task:
        """The task of the next stage: the problem itself without an agenda."""
        if not self.goals_per_stage:
            return self.task
        held = self.task.fluent_goal & self.state
        goal = frozenset(sorted(self.task.fluent_goal - held)[: self.goals_per_stage])
        return restrict(self.task, self.state, goal, f"{self.task.name} (goal agenda, stage {self.stages + 1})", held)

    def stage_done(self, result: DecodeResult, expanded: int) -> DecodeResult | None:
        """Take a stage's result (and the nodes it expanded): the problem's result, or None when a stage follows."""
        if not self.goals_per_stage:
            return result
        self.stages += 1
        self.steps += result.steps
        self.expanded += expanded
        self.estimates_at_most_zero += result.estimates_at_most_zero
        self.state = simulate(dataclasses.replace(self.task, init=self.state), result.plan, require_goal=False)[-1]
        self.plan += result.plan
        if result.solved and not self.task.goal_reached(self.state):
            return None
        return DecodeResult(
            problem=self.task.name,
            problem_file=self.task.problem_file,
            num_objects=len(self.task.objects),
            solved=result.solved,
            plan=self.plan,
            steps=self.steps,
            seconds=time.perf_counter() - self.started,
            outcome=result.outcome,
            expanded=self.expanded,
            estimates_at_most_zero=self.estimates_at_most_zero,
        )

    def stage_config(self, config: DecodeConfig) -> DecodeConfig | None:
        """The next stage's settings: the node budget the earlier stages left; None when they spent it."""
        if not self.goals_per_stage:
            return config
        left = config.budget - self.expanded
        return dataclasses.replace(config, budget=left) if left > 0 else None

    def out_of_budget(self) -> DecodeResult:
        """The problem's result when the earlier stages spent the whole node budget."""
        task = self.task
        spent = DecodeResult(task.name, task.problem_file, len(task.objects), False, [], 0, 0.0, Outcome.BUDGET.value)
        result = self.stage_done(spent, 0)
        assert result is not None
        return result
