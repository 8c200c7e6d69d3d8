"""Search test fixtures: the tiny Blocksworld tasks of `blocks.py`, loaded, and two tower problems."""

import itertools

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


@pytest.fixture
def towers(tmp_path):
    """Two tower-building problems whose plans an uninformed beam of width 1 misses."""
    (tmp_path / "domain.pddl").write_text(DOMAIN)
    out = []
    for name, blocks in (("q4", "abcd"), ("q5", "abcde")):
        goal = " ".join(f"(on {x} {y})" for x, y in itertools.pairwise(blocks))
        (tmp_path / f"{name}.pddl").write_text(problem(name, list(blocks), goal))
        out.append(load_task(tmp_path / "domain.pddl", tmp_path / f"{name}.pddl"))
    return out
