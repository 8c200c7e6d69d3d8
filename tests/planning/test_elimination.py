"""Greedy action elimination against a plain replay: what it drops, and that every step it keeps is needed."""

import dataclasses
import random
import time

import pytest

from statecentric_jax.planning.elimination import eliminate_actions
from statecentric_jax.planning.plans import PlanError, simulate
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import load_task
from tests.planning.test_relevance import shortest_plan
from tests.search.blocks import PLANS


def reaches_goal_without(task, plan, step):
    """Whether the plan still reaches the goal with `step` left out, and each later step whose
    preconditions are then false: the plain way, replayed from the initial state."""
    state = task.init
    for index, action in enumerate(plan):
        op = task.operator(action)
        if index != step and op.pre <= state:
            state = op.apply(state)
    return task.goal_reached(state)


def is_subsequence(short, long):
    steps = iter(long)
    return all(action in steps for action in short)


def detour_plan(task, seed, walk):
    """A valid plan with detours: `walk` random steps, then a shortest plan from there to the goal."""
    rng, generator, state, plan = random.Random(seed), SuccessorGenerator(task), task.init, []
    for _ in range(walk):
        op, state = rng.choice(list(generator.successors(state)))
        plan.append(op.name)
    return plan + shortest_plan(dataclasses.replace(task, init=state), task.fluent_goal)


@pytest.mark.parametrize("which", ["logistics", "blocks"])
@pytest.mark.parametrize("seed", range(6))
def test_kept_steps_are_each_needed_and_still_reach_the_goal(which, seed, request):
    task = request.getfixturevalue(which)
    plan = detour_plan(task, seed, walk=8)
    short = eliminate_actions(task, plan)
    simulate(task, short)  # raises unless it is a plan
    assert is_subsequence(short, plan) and len(short) <= len(plan)
    assert not any(reaches_goal_without(task, short, step) for step in range(len(short)))


@pytest.mark.parametrize("which", ["logistics", "blocks"])
def test_a_shortest_plan_is_left_as_it_is(which, request):
    task = request.getfixturevalue(which)
    plan = shortest_plan(task, task.fluent_goal)
    assert eliminate_actions(task, plan) == plan


def test_past_its_deadline_it_returns_the_steps_kept_so_far(blocks):
    detour = ["(pick-up a)", "(put-down a)", "(pick-up b)", "(stack b c)", "(unstack b c)", "(stack b c)"]
    plan = detour + PLANS["p3"][2:]
    assert eliminate_actions(blocks, plan, deadline=time.perf_counter() - 1) == plan
    assert eliminate_actions(blocks, plan, deadline=time.perf_counter() + 60) == PLANS["p3"]


def test_a_block_picked_up_and_put_down_again_is_dropped(blocks):
    detour = ["(pick-up a)", "(put-down a)", "(pick-up b)", "(stack b c)", "(unstack b c)", "(stack b c)"]
    assert eliminate_actions(blocks, detour + PLANS["p3"][2:]) == PLANS["p3"]


def test_a_plan_that_fails_is_refused(blocks):
    with pytest.raises(PlanError, match="step 1"):
        eliminate_actions(blocks, ["(stack a b)"])
    with pytest.raises(PlanError, match="goal"):
        eliminate_actions(blocks, PLANS["p3"][:2])


LAMP_DOMAIN = """(define (domain lamp) (:requirements :strips)
  (:predicates (lit) (primed))
  (:action prime :parameters () :precondition (and) :effect (primed))
  (:action dim :parameters () :precondition (and) :effect (not (lit)))
  (:action relight :parameters () :precondition (primed) :effect (lit)))"""


def test_passes_repeat_until_none_drops_a_step(tmp_path):
    """Priming is needed while the lamp is dimmed and relit; once those two go, so does priming."""
    (tmp_path / "lamp.pddl").write_text(LAMP_DOMAIN)
    (tmp_path / "p.pddl").write_text("(define (problem p) (:domain lamp) (:init (lit)) (:goal (lit)))")
    task = load_task(tmp_path / "lamp.pddl", tmp_path / "p.pddl")
    assert eliminate_actions(task, ["(prime)", "(dim)", "(relight)"]) == []


def test_a_step_that_blocks_a_later_one_is_kept_out(guarded):
    plan = ["(go r home b)", "(go r b home)", "(go r home b)", "(block b)", "(go r b c)"]
    assert eliminate_actions(guarded, plan) == ["(go r home b)", "(go r b c)"]
