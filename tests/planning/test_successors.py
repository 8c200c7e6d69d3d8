"""The indexed successor generator must agree with pyperplan's own naive loop."""

import random

import pytest
from pyperplan import grounding
from pyperplan.pddl.parser import Parser

from statecentric_jax.planning.successors import SuccessorGenerator, naive_successors
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout


def pyperplan_task(domain_file, problem_file):
    parser = Parser(str(domain_file), str(problem_file))
    problem = parser.parse_problem(parser.parse_domain())
    return grounding.ground(problem, remove_statics_from_initial_state=False, remove_irrelevant_operators=False)


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_matches_pyperplan_on_random_walks(data_root, domain):
    domain_file = layout.domain_file(data_root, domain)
    problem_file = layout.problem_files(data_root, domain, "validation")[-1]
    task = load_task(domain_file, problem_file)
    reference = pyperplan_task(domain_file, problem_file)
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
