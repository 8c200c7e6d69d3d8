"""Relaxed reachability against a plain fixpoint over atom sets, and as a dead-end test that never rejects a
state with a plan."""

import pytest

from statecentric_jax.planning.relaxed import RelaxedReachability
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import load_task
from tests.planning.one_way import ONE_WAY_DOMAIN, one_way_problem


def plain_relaxed_reach(task, state):
    """Apply every operator whose positive preconditions hold, deletes ignored, until nothing is added."""
    reached = set(state)
    while True:
        added = {atom for op in task.operators if op.pre <= reached for atom in op.add} - reached
        if not added:
            return task.fluent_goal <= reached
        reached |= added


def reachable_states(task):
    generator, seen, frontier = SuccessorGenerator(task), {task.init}, [task.init]
    while frontier:
        for _, nxt in generator.successors(frontier.pop()):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return seen


def has_plan(task, state):
    generator, seen, frontier = SuccessorGenerator(task), {state}, [state]
    while frontier:
        current = frontier.pop()
        if task.goal_reached(current):
            return True
        for _, nxt in generator.successors(current):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return False


@pytest.fixture
def one_way(tmp_path):
    (tmp_path / "domain.pddl").write_text(ONE_WAY_DOMAIN)
    (tmp_path / "a.pddl").write_text(one_way_problem("a"))
    return load_task(tmp_path / "domain.pddl", tmp_path / "a.pddl")


@pytest.mark.parametrize("name", ["one_way", "logistics", "blocks", "guarded"])
def test_it_agrees_with_a_plain_fixpoint_and_rejects_no_state_with_a_plan(name, request):
    task = request.getfixturevalue(name)
    relaxed = RelaxedReachability(task)
    states = reachable_states(task)
    verdicts = {state: relaxed.reaches_goal(state) for state in states}
    assert verdicts == {state: plain_relaxed_reach(task, state) for state in states}
    assert all(verdicts[state] for state in states if has_plan(task, state))
    generator = SuccessorGenerator(task)  # from a parent that passed, the same verdicts
    for parent in (state for state in states if verdicts[state]):
        assert all(relaxed.reaches_goal(child, parent) == verdicts[child] for _, child in generator.successors(parent))


def test_the_dead_ends_of_one_way_roads_are_rejected(one_way):
    relaxed = RelaxedReachability(one_way)
    alive = {next(iter(state)) for state in reachable_states(one_way) if relaxed.reaches_goal(state)}
    dead = {next(iter(state)) for state in reachable_states(one_way)} - alive
    assert (alive, dead) == ({"(at a)", "(at x)", "(at goal)"}, {"(at c)", "(at d)", "(at e)"})


def test_negative_preconditions_are_ignored_so_a_blocked_goal_still_reads_as_reachable(guarded):
    blocked = guarded.init | {"(blocked c)"}  # `go` needs (not (blocked c)): no plan, but relaxed the goal is in reach
    assert not has_plan(guarded, blocked)
    assert RelaxedReachability(guarded).reaches_goal(blocked)


def plain_layers(task, state):
    """Each atom's first layer in the plain relaxed fixpoint, one layer per round of every enabled operator."""
    level, layer = {atom: 0 for atom in state}, 0
    while True:
        added = {atom for op in task.operators if op.pre <= level.keys() for atom in op.add} - level.keys()
        if not added:
            return level
        layer += 1
        level.update(dict.fromkeys(added, layer))


@pytest.mark.parametrize("name", ["one_way", "logistics", "blocks", "guarded"])
def test_the_relaxed_plan_reaches_the_goal_with_deletes_ignored_and_its_helpful_actions_are_its_first_steps(
    name, request
):
    task = request.getfixturevalue(name)
    relaxed = RelaxedReachability(task)
    by_name = {op.name: op for op in task.operators}
    for state in sorted(reachable_states(task), key=sorted):
        estimate, helpful = relaxed.relaxed_plan(state)
        level = plain_layers(task, state)
        if not task.fluent_goal <= level.keys():
            assert (estimate, helpful) == (float("inf"), frozenset())
            continue
        hmax = max((level[atom] for atom in task.fluent_goal), default=0)
        assert hmax <= estimate <= len(task.operators)
        assert (estimate == 0) == task.goal_reached(state)
        assert all(by_name[action].pre <= state for action in helpful)
        if estimate:
            assert helpful  # a relaxed plan starts with an operator applicable in the state


def plain_relaxed_plan(task, state):
    """FF's extraction over `plain_layers`: each goal atom, and each precondition of an operator taken, supported
    by the first operator (in operator order) that fires in the layer below its own (an operator fires in the
    layer of its last positive precondition); the plan's operators firing in layer 0 are the helpful ones."""
    level = plain_layers(task, state)
    if not task.fluent_goal <= level.keys():
        return float("inf"), frozenset()
    fires = {
        i: max((level[atom] for atom in op.pre), default=0)
        for i, op in enumerate(task.operators)
        if op.pre <= level.keys()
    }
    plan, needed, supported = set(), [atom for atom in task.fluent_goal if level[atom]], set()
    while needed:
        atom = needed.pop()
        if atom in supported:
            continue
        supported.add(atom)
        i = min(i for i, op in enumerate(task.operators) if atom in op.add and fires.get(i) == level[atom] - 1)
        plan.add(i)
        needed += [pre for pre in task.operators[i].pre if level[pre]]
    return float(len(plan)), frozenset(task.operators[i].name for i in plan if fires[i] == 0)


@pytest.mark.parametrize("name", ["one_way", "logistics", "blocks", "guarded"])
def test_the_relaxed_plan_is_ffs_extraction_from_a_plain_fixpoint(name, request):
    task = request.getfixturevalue(name)
    relaxed = RelaxedReachability(task)
    for state in sorted(reachable_states(task), key=sorted):
        assert relaxed.relaxed_plan(state) == plain_relaxed_plan(task, state)


def test_the_relaxed_plan_of_one_way_roads_counts_the_drives_to_the_goal(one_way):
    relaxed = RelaxedReachability(one_way)
    estimates = {next(iter(s)): relaxed.relaxed_plan(s)[0] for s in reachable_states(one_way)}
    assert estimates["(at goal)"] == 0
    assert all(estimates[place] == float("inf") for place in ("(at c)", "(at d)", "(at e)"))
    assert 0 < estimates["(at x)"] < estimates["(at a)"] < float("inf")
