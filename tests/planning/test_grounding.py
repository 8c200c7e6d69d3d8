"""Grounding by relaxed reachability (Fast Downward's translator) against pyperplan's grounding of
every statically allowed action: on the reachable part of small problems, the same task."""

import collections

import pytest

from statecentric_jax.planning.reference_grounding import reference_task
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import generators

PROBLEMS = [
    "blocks/train/blocks-n04-s01.pddl",
    "gripper/train/gripper-r02-b02-s01.pddl",
    "visitall/train/visitall-w01h03-s01.pddl",
]


def transitions(task):
    """Every reachable state with its (operator name, successor) list, in the task's operator order."""
    generator, graph = SuccessorGenerator(task), {}
    queue = collections.deque([task.init])
    while queue:
        state = queue.popleft()
        if state in graph:
            continue
        graph[state] = [(op.name, nxt) for op, nxt in generator.successors(state)]
        queue.extend(nxt for _, nxt in graph[state] if nxt not in graph)
    return graph


def assert_same_reachable_task(domain, problem):
    new, old = load_task(domain, problem), reference_task(domain, problem)
    old_operators = {op.name: op for op in old.operators}
    for op in new.operators:  # every reachable action, with pyperplan's preconditions and effects
        assert old_operators[op.name] == op
    graph = transitions(new)
    assert graph == transitions(old)
    assert len(graph) > 1


@pytest.mark.parametrize("problem", PROBLEMS)
def test_bundled_problems_ground_like_pyperplan(data_root, problem):
    domain = data_root / "domains" / problem.split("/")[0] / "domain.pddl"
    assert_same_reachable_task(domain, data_root / "domains" / problem)


def test_unreachable_actions_are_not_ground(tmp_path, data_root):
    """Logistics: pyperplan grounds every truck's drives in every city; only its own city's are reachable."""
    domain, problem = data_root / "domains/logistics/domain.pddl", tmp_path / "logistics.pddl"
    problem.write_text(generators.logistics(2, 2, 2, 1, 2, seed=3, name="tiny"))
    assert_same_reachable_task(domain, problem)
    new, old = load_task(domain, problem), reference_task(domain, problem)
    assert len(new.operators) < len(old.operators)
