"""Backward relevance: what it keeps, and that it keeps every goal's shortest plans, with goals
that already hold pursued only where the new goal's operators threaten them."""

import collections
import dataclasses

import pytest

from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.relevance import relevant, restrict
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import atom_arguments, load_task

LAMPS_DOMAIN = """(define (domain lamps) (:requirements :strips)
  (:predicates (on ?x) (lamp ?x) (wired ?x ?y))
  (:action light :parameters (?x) :precondition (lamp ?x) :effect (on ?x))
  (:action jump :parameters (?x ?y) :precondition (wired ?x ?y) :effect (and (on ?x) (not (on ?y)))))"""


@pytest.fixture
def lamps(tmp_path):
    """Lamp b is lit only by jumping from a, which goes dark: a goal reached first is undone by the second."""
    (tmp_path / "lamps.pddl").write_text(LAMPS_DOMAIN)
    (tmp_path / "p.pddl").write_text(
        "(define (problem p) (:domain lamps) (:objects a b) (:init (lamp a) (wired b a)) (:goal (and (on a) (on b))))"
    )
    return load_task(tmp_path / "lamps.pddl", tmp_path / "p.pddl")


def shortest_plan(task, goal):
    """A shortest plan from task.init to a state holding `goal` (breadth-first), or None."""
    generator, parent = SuccessorGenerator(task), {task.init: None}
    queue = collections.deque([task.init])
    while queue:
        state = queue.popleft()
        if goal <= state:
            plan = []
            while parent[state] is not None:
                state, action = parent[state]
                plan.append(action)
            return plan[::-1]
        for op, nxt in generator.successors(state):
            if nxt not in parent:
                parent[nxt] = (state, op.name)
                queue.append(nxt)
    return None


def test_one_package_goal_keeps_the_vehicles_and_that_package_only(logistics):
    goal = sorted(logistics.fluent_goal)[0]
    package = atom_arguments(goal)[0]
    atoms, indices = relevant(logistics, {goal})
    moved = {name.split()[1] for name in (logistics.operators[i].name for i in indices) if "load" in name}
    assert moved == {package}
    assert any("fly-airplane" in logistics.operators[i].name for i in indices)
    assert any("drive-truck" in logistics.operators[i].name for i in indices)
    packages = {atom_arguments(a)[0] for a in atoms if atom_arguments(a)[0].startswith("p")}
    assert packages == {package}
    assert len(indices) < len(logistics.operators)


@pytest.mark.parametrize("which", ["logistics", "blocks"])
def test_restricted_tasks_keep_every_goals_shortest_plans(which, request):
    task = request.getfixturevalue(which)
    goals = sorted(task.fluent_goal)
    for goal in [{g} for g in goals] + [set(goals)]:
        sub = restrict(task, task.init, goal, "sub")
        full_plan, sub_plan = shortest_plan(task, goal), shortest_plan(sub, goal)
        assert sub_plan is not None and len(sub_plan) == len(full_plan)
        assert goal <= simulate(task, sub_plan, require_goal=False)[-1]  # runs unchanged in the full task
        assert sub.init <= task.init and sub.goal >= goal


def reach(task, goal, plan):
    """The state after a plan of `goal` from task.init, in which goal holds."""
    state = simulate(task, plan, require_goal=False)[-1]
    assert goal <= state
    return state


@pytest.mark.parametrize("which", ["logistics", "blocks", "lamps"])
def test_kept_goals_keep_the_restriction_exact(which, request):
    """With the first goal reached and kept, the second is as far in the restricted task as in the full one."""
    task = request.getfixturevalue(which)
    first, second = sorted(task.fluent_goal)
    state = reach(task, {first}, shortest_plan(task, {first}))
    sub = restrict(task, state, {second}, "stage", frozenset({first}))
    later = dataclasses.replace(task, init=state)
    full_plan, sub_plan = shortest_plan(later, {first, second}), shortest_plan(sub, {second} | {first})
    assert sub_plan is not None and len(sub_plan) == len(full_plan)
    assert {first, second} <= simulate(later, sub_plan)[-1]
    assert first in sub.goal and first in sub.init


def test_a_delivered_package_drops_out_and_a_threatened_goal_stays(logistics, lamps):
    first, second = sorted(logistics.fluent_goal)
    delivered = atom_arguments(first)[0]
    state = reach(logistics, {first}, shortest_plan(logistics, {first}))
    sub = restrict(logistics, state, {second}, "stage", frozenset({first}))
    assert not [op.name for op in sub.operators if delivered in op.name.split()]
    assert len(sub.operators) < len(restrict(logistics, state, {first, second}, "stage").operators)

    state = reach(lamps, {"(on a)"}, ["(light a)"])
    sub = restrict(lamps, state, {"(on b)"}, "stage", frozenset({"(on a)"}))
    assert sorted(op.name for op in sub.operators) == ["(jump b a)", "(light a)"]  # jumping darkens a: relit
    assert [op.name for op in restrict(lamps, state, {"(on b)"}, "stage").operators] == ["(jump b a)"]  # none kept


GATE_DOMAIN = """(define (domain gate) (:requirements :strips :negative-preconditions)
  (:predicates (locked) (inside) (alarm))
  (:action unlock :parameters () :precondition (and) :effect (not (locked)))
  (:action lock :parameters () :precondition (and) :effect (locked))
  (:action ring :parameters () :precondition (and) :effect (alarm))
  (:action enter :parameters () :precondition (not (locked)) :effect (inside)))"""


def test_a_negative_precondition_makes_its_atoms_deleters_relevant(tmp_path):
    """Entering needs the gate unlocked: unlocking adds nothing, yet the goal needs it; ringing stays out."""
    (tmp_path / "gate.pddl").write_text(GATE_DOMAIN)
    (tmp_path / "p.pddl").write_text("(define (problem p) (:domain gate) (:init (locked)) (:goal (and (inside))))")
    task = load_task(tmp_path / "gate.pddl", tmp_path / "p.pddl")
    atoms, indices = relevant(task, {"(inside)"})
    assert atoms == {"(inside)", "(locked)"}
    assert sorted(task.operators[i].name for i in indices) == ["(enter)", "(unlock)"]
    sub = restrict(task, task.init, {"(inside)"}, "sub")
    assert shortest_plan(sub, {"(inside)"}) == ["(unlock)", "(enter)"]
