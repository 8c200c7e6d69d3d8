"""The indexed successor generator must agree with pyperplan's own naive loop."""

import random

import pytest

from statecentric_jax.planning.reference_grounding import pyperplan_grounded
from statecentric_jax.planning.successors import SuccessorGenerator, naive_successors
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_matches_pyperplan_on_random_walks(data_root, domain):
    domain_file = layout.domain_file(data_root, domain)
    problem_file = layout.problem_files(data_root, domain, "validation")[-1]
    task = load_task(domain_file, problem_file)
    reference = pyperplan_grounded(domain_file, problem_file)
    generator = SuccessorGenerator(task)
    rng = random.Random(0)
    state, branching = task.init, []
    for _ in range(60):
        fast = generator.successors(state)
        expected = sorted(
            (op.name, frozenset(next_state - task.static))
            for op, next_state in reference.get_successor_states(state | task.static)
        )
        assert [(op.name, s) for op, s in fast] == expected
        assert fast == naive_successors(task, state)
        branching.append(len(fast))
        state = rng.choice(fast)[1]
    assert max(branching) > 1  # the walk actually explored choices


def test_negative_preconditions_are_tested(guarded):
    generator = SuccessorGenerator(guarded)
    rng = random.Random(0)
    state, seen = guarded.init, set()
    for _ in range(40):
        fast = generator.successors(state)
        assert fast == naive_successors(guarded, state)
        assert all(not (op.pre_neg & state) for op, _ in fast)
        seen.update(op.name for op, _ in fast)
        state = rng.choice(fast)[1] if fast else guarded.init
    assert "(go r home b)" in seen
    blocked = guarded.operator("(block b)").apply(guarded.init)
    assert [op.name for op, _ in generator.successors(blocked)] == ["(block c)"]
