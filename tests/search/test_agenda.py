"""Goal agenda: batched staged decoding against a plain loop of searches on restricted tasks."""

import pytest

from statecentric_jax.planning.elimination import eliminate_actions
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.relevance import restrict
from statecentric_jax.search.base import DecodeConfig
from statecentric_jax.search.decoding import decode
from tests.search.blocks import AtomEncoder
from tests.search.test_strategies import FixedTargetModel, LinearCostToGo, ShiftModel, reference_best_first


def reference_agenda(task, goals_per_stage, model, encoder, config, cost_to_go):
    """The agenda the plain way: one problem, stage after stage, each a reference best-first search."""
    state, plan = task.init, []
    while not task.goal_reached(state):
        held = task.fluent_goal & state
        stage = restrict(task, state, sorted(task.fluent_goal - held)[:goals_per_stage], "stage", held)
        stage_plan, _ = reference_best_first(stage, model, encoder, config, cost_to_go)
        if stage_plan is None:
            return None
        state = simulate(task, [*plan, *stage_plan], require_goal=False)[-1]
        plan += stage_plan
    return plan


@pytest.fixture
def all_tasks(tasks, towers):
    return tasks + towers


@pytest.mark.parametrize("goals_per_stage", [1, 2])
@pytest.mark.parametrize("seed", [0, 1])
def test_agenda_matches_the_plain_loop_and_reaches_the_goal(all_tasks, goals_per_stage, seed):
    encoder = AtomEncoder()
    model, cost_to_go = ShiftModel(encoder.dim, seed), LinearCostToGo(encoder.dim, seed)
    config = DecodeConfig(strategy="best_first", metric="euclidean", goal_agenda=goals_per_stage, budget=5000)
    results = decode(all_tasks, model, encoder, config, cost_to_go=cost_to_go)
    expected = [reference_agenda(t, goals_per_stage, model, encoder, config, cost_to_go) for t in all_tasks]
    assert [r.plan for r in results] == expected
    assert all(r.solved and r.outcome == "goal" for r in results)
    for task, result in zip(all_tasks, results):
        simulate(task, result.plan)  # raises unless the joined plan reaches the whole goal
        assert result.problem == task.name and result.problem_file == task.problem_file


def test_the_budget_is_the_problems_across_its_stages(towers):
    encoder, model = AtomEncoder(), FixedTargetModel(AtomEncoder().dim, seed=0)
    generous = decode(towers, model, encoder, DecodeConfig(strategy="best_first", metric="euclidean", goal_agenda=1))
    assert all(r.solved for r in generous)
    needed = generous[1].steps  # best-first expands one node a round
    tight = DecodeConfig(strategy="best_first", metric="euclidean", goal_agenda=1, budget=needed - 1)
    result = decode(towers[1:], model, encoder, tight)[0]
    assert not result.solved and result.outcome == "budget"
    assert result.steps <= needed - 1
    simulate(towers[1], result.plan, require_goal=False)  # the stages done so far still run


@pytest.mark.parametrize("strategy", ["beam", "beam_backtrack", "restarts"])
def test_every_strategy_runs_in_stages(towers, strategy):
    encoder, model = AtomEncoder(), FixedTargetModel(AtomEncoder().dim, seed=2)
    config = DecodeConfig(strategy=strategy, metric="euclidean", goal_agenda=1, beam_width=2, budget=5000)
    for task, result in zip(towers, decode(towers, model, encoder, config)):
        if result.solved:
            simulate(task, result.plan)
        else:
            assert result.outcome in ("dead end", "horizon", "budget")
            simulate(task, result.plan, require_goal=False)


def test_the_horizon_is_the_problems_across_its_stages(towers):
    encoder, model = AtomEncoder(), FixedTargetModel(AtomEncoder().dim, seed=0)
    settings = dict(strategy="best_first", metric="euclidean", goal_agenda=1, horizon_per_object=0)
    solved = decode(towers[1:], model, encoder, DecodeConfig(**settings))[0]
    assert solved.solved  # in several stages, each shorter than the whole plan: each alone fits the cut horizon
    cut = decode(towers[1:], model, encoder, DecodeConfig(**settings, horizon_base=len(solved.plan) - 1))[0]
    assert not cut.solved and cut.outcome == "horizon" and len(cut.plan) < len(solved.plan)


@pytest.mark.parametrize(("strategy", "goal_agenda", "detours"), [("beam", 0, False), ("best_first", 1, True)])
def test_action_elimination_shortens_the_plans_it_is_given(all_tasks, strategy, goal_agenda, detours):
    """Decoding with it gives each solved plan of decoding without it, less the steps the goal does not need
    (this model's staged plans carry some; its beam's solved plans none)."""
    encoder, model = AtomEncoder(), ShiftModel(AtomEncoder().dim, seed=1)
    settings = dict(strategy=strategy, metric="euclidean", goal_agenda=goal_agenda, budget=5000)
    plain = decode(all_tasks, model, encoder, DecodeConfig(**settings))
    short = decode(all_tasks, model, encoder, DecodeConfig(**settings, action_elimination=True))
    expected = [eliminate_actions(t, r.plan) if r.solved else r.plan for t, r in zip(all_tasks, plain)]
    assert [r.plan for r in short] == expected
    assert [(r.solved, r.outcome) for r in short] == [(r.solved, r.outcome) for r in plain]
    assert (expected != [r.plan for r in plain]) == detours
