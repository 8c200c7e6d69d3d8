"""Planning test fixtures: tiny Logistics, a three-block tower, a domain with negative preconditions."""

import pytest

from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import generators
from tests.planning.guarded import NEGATIVE_DOMAIN, NEGATIVE_PROBLEM
from tests.search.blocks import DOMAIN as BLOCKS_DOMAIN
from tests.search.blocks import problem


@pytest.fixture
def logistics(tmp_path, data_root):
    """Two cities, one airplane, three packages, two of them with a goal."""
    domain = data_root / "domains/logistics/domain.pddl"
    path = tmp_path / "logistics.pddl"
    path.write_text(generators.logistics(2, 2, 3, 1, 2, seed=3, name="tiny"))
    return load_task(domain, path)


@pytest.fixture
def blocks(tmp_path):
    (tmp_path / "domain.pddl").write_text(BLOCKS_DOMAIN)
    (tmp_path / "p.pddl").write_text(problem("p", ["a", "b", "c"], "(on a b) (on b c)"))
    return load_task(tmp_path / "domain.pddl", tmp_path / "p.pddl")


@pytest.fixture
def guarded(tmp_path):
    (tmp_path / "guarded.pddl").write_text(NEGATIVE_DOMAIN)
    (tmp_path / "g.pddl").write_text(NEGATIVE_PROBLEM)
    return load_task(tmp_path / "guarded.pddl", tmp_path / "g.pddl")
