"""Plan replay: trajectories for valid plans, precise errors for invalid ones."""

import pathlib

import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.planning.plans import PlanError, format_plan, read_plan, simulate
from statecentric_jax.planning.tasks import load_task

DOMAIN = (pathlib.Path(__file__).resolve().parents[2] / "data/domains/blocks/domain.pddl").read_text()
PROBLEM = """(define (problem two) (:domain blocks) (:objects a b c)
  (:init (clear a) (clear b) (clear c) (ontable a) (ontable b) (ontable c) (handempty))
  (:goal (and (on a b) (on b c))))
"""


@pytest.fixture
def task(tmp_path):
    (tmp_path / "d.pddl").write_text(DOMAIN)
    (tmp_path / "p.pddl").write_text(PROBLEM)
    return load_task(tmp_path / "d.pddl", tmp_path / "p.pddl")


def test_valid_plan_gives_trajectory(task):
    plan = ["(pick-up b)", "(stack b c)", "(pick-up a)", "(stack a b)"]
    states = simulate(task, plan)
    assert len(states) == 5 and states[0] == task.init
    assert task.goal_reached(states[-1]) and not task.goal_reached(states[-2])
    assert "(on b c)" in states[2]


def test_inapplicable_step_is_named(task):
    with pytest.raises(PlanError) as info:
        simulate(task, ["(pick-up b)", "(pick-up a)"], source="bad.plan")
    error = info.value
    assert error.step == 2 and error.missing == ("(handempty)",)
    assert str(error) == "bad.plan: step 2: (pick-up a) is not applicable: precondition(s) (handempty) false"


def test_missing_goal_atoms_are_named(task):
    with pytest.raises(PlanError) as info:
        simulate(task, ["(pick-up b)", "(stack b c)"])
    assert info.value.step is None
    assert info.value.missing == ("(on a b)",)
    assert "goal not reached after 2 steps: missing (on a b)" in str(info.value)
    assert len(simulate(task, ["(pick-up b)"], require_goal=False)) == 2


def test_unknown_action(task):
    with pytest.raises(PlanError, match=r"step 1: \(fly a\) is not a ground action"):
        simulate(task, ["(fly a)"])


def test_plan_file_round_trip_with_comments(tmp_path, task):
    path = tmp_path / "x.plan"
    path.write_text(
        "; found by FD\n(PICK-UP  b)\n(stack b c) ; inline\n\n" + format_plan(["(pick-up a)", "(stack a b)"])
    )
    actions = read_plan(path)
    assert actions == ["(pick-up b)", "(stack b c)", "(pick-up a)", "(stack a b)"]
    assert task.goal_reached(simulate(task, actions, source=str(path))[-1])


def test_malformed_plan_line(tmp_path):
    path = tmp_path / "x.plan"
    path.write_text("(pick-up a)\npick-up b\n")
    with pytest.raises(InputError, match="line 2 is not an action"):
        read_plan(path)


def test_a_negative_precondition_that_holds_is_named(guarded):
    with pytest.raises(PlanError) as info:
        simulate(guarded, ["(block b)", "(go r home b)"], source="bad.plan")
    assert info.value.step == 2 and info.value.missing == ("(not (blocked b))",)
    assert str(info.value).endswith("(go r home b) is not applicable: precondition(s) (not (blocked b)) false")
    assert len(simulate(guarded, ["(go r home b)", "(block b)", "(go r b c)"])) == 4
