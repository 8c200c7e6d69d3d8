"""Grounding by relaxed reachability (Fast Downward's translator's model) against pyperplan's grounding of
every statically allowed action: on the reachable part of small problems, the same task; and against the
translator's own instantiation of that model: the same task."""

import collections
import pathlib

import pytest

from statecentric_jax.planning.reference_grounding import reference_task, translator_grounded
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import generators
from tests.planning.guarded import NEGATIVE_DOMAIN, NEGATIVE_PROBLEM

IPC = pathlib.Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "ipc2023-learning"  # beside the clone
IPC_DOMAINS = ["blocksworld", "childsnack", "ferry", "floortile", "miconic", "rovers", "satellite", "sokoban"]

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


def assert_instantiated_like_the_translator(domain, problem):
    task = load_task(domain, problem)
    assert task == load_task(domain, problem, grounder=translator_grounded)
    assert task.operators
    return task


@pytest.mark.parametrize("problem", PROBLEMS)
def test_bundled_problems_instantiate_like_the_translator(data_root, problem):
    domain = data_root / "domains" / problem.split("/")[0] / "domain.pddl"
    assert_instantiated_like_the_translator(domain, data_root / "domains" / problem)


def test_negative_preconditions_constants_and_equality_instantiate_like_the_translator(tmp_path):
    (tmp_path / "guarded.pddl").write_text(NEGATIVE_DOMAIN)
    (tmp_path / "g.pddl").write_text(NEGATIVE_PROBLEM)
    task = assert_instantiated_like_the_translator(tmp_path / "guarded.pddl", tmp_path / "g.pddl")
    assert any(op.pre_neg for op in task.operators)


@pytest.mark.skipif(not IPC.is_dir(), reason="the IPC 2023 learning track is not on this machine")
@pytest.mark.parametrize("domain", IPC_DOMAINS)
def test_ipc_training_problems_instantiate_like_the_translator(domain):
    for problem in ("p01.pddl", "p02.pddl"):
        assert_instantiated_like_the_translator(IPC / domain / "domain.pddl", IPC / domain / "training/easy" / problem)
