"""Goal paths on the smallest Logistics case that WL colours cannot see: a package in the truck of its
goal city (A) against the same packages swapped between the trucks (B)."""

import random

import numpy as np
import pytest

from statecentric_jax.embedding import goal_paths as goal_paths_module
from statecentric_jax.embedding.encoders import WLEncoder, WLSettings
from statecentric_jax.embedding.goal_paths import GoalPathEncoder, derived_goal_paths, goal_paths, goal_paths_of_each
from statecentric_jax.errors import InputError
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import generators
from statecentric_jax.problems.domains import domain_file

TWO_CITIES = """(define (problem two-cities) (:domain logistics)
  (:objects a0 a1 c0 c1 t0 t1 l0 l1 p0 p1)
  (:init (airplane a0) (airplane a1) (city c0) (city c1) (truck t0) (truck t1)
    (location l0) (location l1) (in-city l0 c0) (in-city l1 c1) (airport l0) (airport l1)
    (package p0) (package p1) (at t0 l0) (at t1 l1) (at a0 l0) (at a1 l1) (in p0 t0) (in p1 t1))
  (:goal (and (at p0 l0) (at p1 l1))))
"""


@pytest.fixture
def two_cities(tmp_path):
    (tmp_path / "two-cities.pddl").write_text(TWO_CITIES)
    task = load_task(domain_file("logistics"), tmp_path / "two-cities.pddl")
    right = frozenset(task.init)
    swapped = (right - {"(in p0 t0)", "(in p1 t1)"}) | {"(in p0 t1)", "(in p1 t0)"}
    return task, right, swapped


def test_each_unreached_goal_counts_the_ways_its_objects_are_joined(two_cities):
    task, right, swapped = two_cities
    # from the goal location l0 to the package p0: the truck at l0 (at, positions 1 to 0) holds it (in, 1 to 0)
    assert goal_paths(task, right, length=2) == {("at", (("at:1>0", "in:1>0"),)): 2}
    assert goal_paths(task, swapped, length=2) == {("at", ()): 2}  # each package is out of reach
    unloaded = (right - {"(in p0 t0)"}) | {"(at p0 l0)"}
    assert goal_paths(task, unloaded, length=2) == {("at", (("at:1>0", "in:1>0"),)): 1}  # a reached goal counts not


def test_goal_paths_tell_apart_what_wl_colours_cannot(two_cities):
    task, right, swapped = two_cities
    wl = WLEncoder.fit("logistics", [(task, [right, swapped])], WLSettings())
    assert np.array_equal(*wl.embed([(task, right), (task, swapped)]))
    paths = GoalPathEncoder.fit("logistics", [(task, [right, swapped])], length=4)
    a, b = paths.embed([(task, right), (task, swapped)])
    assert not np.array_equal(a, b) and a.sum() == b.sum() == 2
    assert paths.embed_goals([task]).shape == (1, paths.dim) and not paths.embed_goals([task]).any()


def test_colours_outside_the_vocabulary_are_counted_and_dropped(two_cities):
    task, right, swapped = two_cities
    paths = GoalPathEncoder.fit("logistics", [(task, [right])], length=2)
    features, unseen = paths.embed_with_unseen([(task, swapped)])
    assert paths.dim == 1 and unseen == 1.0 and not features.any()


def test_saved_and_loaded_it_embeds_the_same(two_cities, tmp_path):
    task, right, swapped = two_cities
    paths = GoalPathEncoder.fit("logistics", [(task, [right, swapped])], length=4)
    paths.save(tmp_path / "paths.json")
    loaded = GoalPathEncoder.load(tmp_path / "paths.json")
    pairs = [(task, right), (task, swapped)]
    assert loaded.length == 4 and np.array_equal(loaded.embed(pairs), paths.embed(pairs))
    (tmp_path / "paths.json").write_text('{"statecentric": {"kind": "wl"}}')
    with pytest.raises(InputError, match="corrupt goal-path encoder file"):
        GoalPathEncoder.load(tmp_path / "paths.json")
    with pytest.raises(InputError, match="length >= 1"):
        GoalPathEncoder("logistics", task.predicates, 0, [])


def _search_edges(task, steps, seed):
    """(parent, child) for every successor along a random walk: the pairs a search embeds."""
    successors, rng, state, edges = SuccessorGenerator(task), random.Random(seed), frozenset(task.init), []
    for _ in range(steps):
        children = [child for _, child in successors.successors(state)]
        edges += [(state, child) for child in children]
        state = rng.choice(children)
    return edges


@pytest.mark.parametrize(
    "domain, problem",
    [
        ("logistics", generators.logistics(3, 2, 6, 2, 5, seed=1, name="three-cities")),
        ("blocks", generators.blocks(6, seed=1, name="six")),
    ],
    ids=["logistics", "blocks"],
)
def test_derived_from_the_parent_they_are_the_paths_computed_afresh(tmp_path, domain, problem):
    (tmp_path / "problem.pddl").write_text(problem)
    task = load_task(domain_file(domain), tmp_path / "problem.pddl")
    pairs = _search_edges(task, steps=25, seed=2)
    for length in (1, 2, 3, 4):
        for parent, child in pairs:
            derived = derived_goal_paths(task, parent, goal_paths_of_each(task, parent, length), child, length)
            assert derived == goal_paths_of_each(task, child, length)
    paths = GoalPathEncoder.fit(domain, [(task, [child for _, child in pairs])], length=4)
    pairs_of_task = [(task, child) for _, child in pairs]
    with_parents = paths.embed(pairs_of_task, [parent for parent, _ in pairs])
    assert np.array_equal(with_parents, paths.embed(pairs_of_task)) and with_parents.any()


def _every_walk(graphs, source, length):
    """Reference: every walk of at most `length` edges from `source`, unpruned, by end object."""
    reached, frontier = {}, {source: {()}}
    for _ in range(length):
        step = {}
        for node, sequences in frontier.items():
            for edges in graphs:
                for label, neighbour in edges.get(node, ()):
                    step.setdefault(neighbour, set()).update((*s, label) for s in sequences)
        for node, sequences in step.items():
            reached.setdefault(node, set()).update(sequences)
        frontier = step
    return reached


@pytest.mark.parametrize(
    "domain, problem",
    [
        ("logistics", generators.logistics(3, 2, 6, 2, 5, seed=1, name="three-cities")),
        ("blocks", generators.blocks(6, seed=1, name="six")),
        ("visitall", generators.visitall(4, 3, (1, 1), name="grid")),
    ],
    ids=["logistics", "blocks", "visitall"],
)
def test_walks_cut_short_far_from_the_goal_objects_give_the_paths_of_every_walk(tmp_path, domain, problem):
    (tmp_path / "problem.pddl").write_text(problem)
    task = load_task(domain_file(domain), tmp_path / "problem.pddl")
    graphs = (goal_paths_module._static_edges(task.static), goal_paths_module._edges(frozenset(task.init)))
    goals = sorted(task.fluent_goal - frozenset(task.init))
    assert goals
    for length in (1, 2, 3, 4):
        paths = goal_paths_module._of_goals(graphs, goals, length)
        for goal in goals:
            args = goal_paths_module.atom_arguments(goal)
            expected = _every_walk(graphs, args[-1], length).get(args[0], set())
            assert paths[goal][1] == tuple(sorted(expected))
