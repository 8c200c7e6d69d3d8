"""Search test fixtures: the tiny Blocksworld tasks of `blocks.py`, loaded."""

import pytest

from statecentric_jax.planning.tasks import load_task
from tests.search.blocks import DOMAIN, PROBLEMS, problem


@pytest.fixture
def tasks(tmp_path):
    (tmp_path / "domain.pddl").write_text(DOMAIN)
    out = []
    for name, (blocks, goal) in PROBLEMS.items():
        (tmp_path / f"{name}.pddl").write_text(problem(name, blocks, goal))
        out.append(load_task(tmp_path / "domain.pddl", tmp_path / f"{name}.pddl"))
    return out
