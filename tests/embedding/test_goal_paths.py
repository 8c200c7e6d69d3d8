"""Goal paths on the smallest Logistics case that WL colours cannot see: a package in the truck of its
goal city (A) against the same packages swapped between the trucks (B)."""

import random

import numpy as np
import pytest

from statecentric_jax.embedding.encoders import WLEncoder, WLSettings
from statecentric_jax.embedding.goal_paths import (
    GoalPathEncoder,
    Walks,
    _applied,
    _edge_changes,
    _edges,
    _Memo,
    derived_goal_paths,
    goal_path_change,
    goal_paths,
    goal_paths_of_each,
)
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


SMALL = [
    ("logistics", generators.logistics(3, 2, 6, 2, 5, seed=1, name="three-cities")),
    ("blocks", generators.blocks(6, seed=1, name="six")),
]
SMALL_PROBLEMS = pytest.mark.parametrize("domain, problem", SMALL, ids=["logistics", "blocks"])
# and objects with many neighbours under one label, many alike: walks extended once per label, shared by content
WITH_ALIKE = pytest.mark.parametrize(
    "domain, problem",
    [
        *SMALL,
        ("gripper", generators.gripper(6, n_rooms=3, seed=1, name="three-rooms")),
        ("visitall", generators.visitall(4, 3, (1, 1), name="four-by-three")),
    ],
    ids=["logistics", "blocks", "gripper", "visitall"],
)


def _search_edges(task, steps, seed):
    """(parent, child) for every successor along a random walk: the pairs a search embeds."""
    successors, rng, state, edges = SuccessorGenerator(task), random.Random(seed), frozenset(task.init), []
    for _ in range(steps):
        children = [child for _, child in successors.successors(state)]
        edges += [(state, child) for child in children]
        state = rng.choice(children)
    return edges


@SMALL_PROBLEMS
def test_derived_from_the_parent_they_are_the_paths_computed_afresh(tmp_path, domain, problem):
    (tmp_path / "problem.pddl").write_text(problem)
    task = load_task(domain_file(domain), tmp_path / "problem.pddl")
    pairs = _search_edges(task, steps=25, seed=2)
    for length in (1, 2, 3, 4):
        for parent, child in pairs:
            derived = derived_goal_paths(task, parent, goal_paths_of_each(task, parent, length), child, length)
            assert derived == goal_paths_of_each(task, child, length)
            walks = Walks.of(task, parent)  # the parent's walks, reused where the change is far
            parent_paths = goal_paths_of_each(task, parent, length, walks)
            assert derived_goal_paths(task, parent, parent_paths, child, length, walks) == derived
            named = parent | task.static  # a parent that names the static atoms too: they stay in the graph
            walks = Walks.of(task, named)
            parent_paths = goal_paths_of_each(task, named, length, walks)
            assert derived_goal_paths(task, named, parent_paths, child, length, walks) == derived
    far = [(pairs[i][0], pairs[-1 - i][1]) for i in range(len(pairs))]  # states far apart: the same holds
    for parent, state in far:
        derived = derived_goal_paths(task, parent, goal_paths_of_each(task, parent, 4), state, 4)
        assert derived == goal_paths_of_each(task, state, 4)
    pairs_of_task = [(task, child) for _, child in pairs]
    for fitted_on in (pairs, pairs[:1]):  # the second leaves paths outside the vocabulary
        paths = GoalPathEncoder.fit(domain, [(task, [child for _, child in fitted_on])], length=4)
        with_parents, unseen = paths.embed_with_unseen(pairs_of_task, [parent for parent, _ in pairs])
        afresh, unseen_afresh = paths.embed_with_unseen(pairs_of_task)
        assert np.array_equal(with_parents, afresh) and with_parents.any() and unseen == unseen_afresh
        # parents derived from the parent embedded before them, in a search's order and out of it
        shuffled = random.Random(0).sample(pairs, len(pairs))
        in_one_call = paths.embed([(task, child) for _, child in shuffled], [parent for parent, _ in shuffled])
        one_at_a_time = np.concatenate([paths.embed([(task, child)], [parent]) for parent, child in shuffled])
        assert np.array_equal(in_one_call, paths.embed([(task, child) for _, child in shuffled]))
        assert np.array_equal(one_at_a_time, in_one_call)
    assert unseen > 0


@WITH_ALIKE
def test_a_search_sharing_its_walks_by_content_embeds_as_afresh(tmp_path, monkeypatch, domain, problem):
    (tmp_path / "problem.pddl").write_text(problem)
    task = load_task(domain_file(domain), tmp_path / "problem.pddl")
    walks = Walks.of(task, frozenset(task.init))  # the shared walks are keyed on one tuple per neighbours
    for neighbours in walks.edges.values():
        assert walks.memo.neighbours(list(reversed(neighbours))) is neighbours
    pairs = _search_edges(task, steps=25, seed=4)
    children, parents = [(task, child) for _, child in pairs], [parent for parent, _ in pairs]
    paths = GoalPathEncoder.fit(domain, [(task, [child for _, child in pairs])], length=4)
    afresh = paths.embed(children)
    bounds = ((_Memo.LIMIT, _Memo.ITEMS), (3, _Memo.ITEMS), (_Memo.LIMIT, 50))  # the last two empty it often
    for limit, items in bounds:
        monkeypatch.setattr(_Memo, "LIMIT", limit)
        monkeypatch.setattr(_Memo, "ITEMS", items)
        paths._last_parents.clear()
        assert np.array_equal(paths.embed(children, parents), afresh)


def test_searches_decoded_together_each_derive_from_their_own_last_parent(tmp_path, monkeypatch):
    """Two searches whose parents are embedded in turn (as decoding problems in lockstep does): each parent is
    derived from its own search's last one, walked afresh only once per search, with the embeddings of afresh."""
    tasks = []
    for seed in (1, 2):
        (tmp_path / f"p{seed}.pddl").write_text(generators.logistics(3, 2, 6, 2, 5, seed=seed, name=f"p{seed}"))
        tasks.append(load_task(domain_file("logistics"), tmp_path / f"p{seed}.pddl"))
    searches = [[(task, pair) for pair in _search_edges(task, steps=12, seed=3)] for task in tasks]
    turns = [entry for pair in zip(*searches) for entry in pair]  # a (parent, child) of each search in turn
    paths = GoalPathEncoder.fit("logistics", [(task, [c for _, (_, c) in s]) for task, s in zip(tasks, searches)], 4)
    afresh = paths.embed([(task, child) for task, (_, child) in turns])
    walked = []
    original = Walks.of.__func__

    def counted(cls, task, state):
        walked.append(task)
        return original(cls, task, state)

    monkeypatch.setattr(Walks, "of", classmethod(counted))
    derived = np.concatenate([paths.embed([(task, child)], [parent]) for task, (parent, child) in turns])
    assert np.array_equal(derived, afresh) and afresh.any()
    assert len(walked) == 2 and {id(task) for task in walked} == {id(task) for task in tasks}


# a courier joined to every place by static roads of its own (as Rovers' can_traverse): each move changes the
# neighbours of an object next to every place, so most halves are patched through it
COURIER_DOMAIN = """(define (domain courier)
  (:predicates (at ?a ?p) (road ?a ?from ?to) (parcel ?x ?p) (carries ?a ?x) (wanted ?x ?p))
  (:action drive :parameters (?a ?from ?to)
    :precondition (and (at ?a ?from) (road ?a ?from ?to)) :effect (and (not (at ?a ?from)) (at ?a ?to)))
  (:action pick :parameters (?a ?x ?p)
    :precondition (and (at ?a ?p) (parcel ?x ?p)) :effect (and (not (parcel ?x ?p)) (carries ?a ?x)))
  (:action drop :parameters (?a ?x ?p)
    :precondition (and (at ?a ?p) (carries ?a ?x)) :effect (and (not (carries ?a ?x)) (parcel ?x ?p))))
"""


def _courier(places, parcels, seed):
    rng = random.Random(seed)
    roads = [f"(road a{a} p{i} p{j})" for a in (0, 1) for i in range(places) for j in range(places) if i != j]
    parcels_at = [f"(parcel x{i} p{rng.randrange(places)})" for i in range(parcels)]
    goals = [f"(parcel x{i} p{rng.randrange(places)})" for i in range(parcels)]
    objects = " ".join([f"a{a}" for a in (0, 1)] + [f"p{i}" for i in range(places)] + [f"x{i}" for i in range(parcels)])
    return f"""(define (problem courier) (:domain courier) (:objects {objects})
  (:init (at a0 p0) (at a1 p1) {" ".join(roads + parcels_at)}) (:goal (and {" ".join(goals)})))"""


@pytest.mark.parametrize("looked_up", [True, False], ids=["looked-up-first", "patched-at-once"])
@pytest.mark.parametrize("domain", ["logistics", "blocks", "courier"])
def test_halves_patched_along_a_search_are_the_halves_walked_afresh(tmp_path, monkeypatch, domain, looked_up):
    monkeypatch.setattr(_Memo, "_worth_looking_up", lambda self: looked_up)
    if domain == "courier":
        (tmp_path / "domain.pddl").write_text(COURIER_DOMAIN)
        (tmp_path / "problem.pddl").write_text(_courier(6, 5, seed=1))
        task = load_task(tmp_path / "domain.pddl", tmp_path / "problem.pddl")
    else:
        (tmp_path / "problem.pddl").write_text(dict(SMALL)[domain])
        task = load_task(domain_file(domain), tmp_path / "problem.pddl")
    successors, rng = SuccessorGenerator(task), random.Random(5)
    for length in (2, 3, 4, 5):
        state = frozenset(task.init)
        walks = Walks.of(task, state)
        paths = goal_paths_of_each(task, state, length, walks)
        for _ in range(40):  # each state's halves patched from its parent's, and so on
            child = rng.choice([child for _, child in successors.successors(state)])
            change = goal_path_change(task, state, paths, child, length, walks, keep=True)
            paths, walks, state = _applied(paths, change), change.walks, child
            assert paths == goal_paths_of_each(task, state, length)


def test_a_moved_objects_neighbours_are_the_shared_tuple_of_the_new_graph(tmp_path):
    """A courier's neighbours after a move, derived from those before it, once per change: the tuple of the
    graph built afresh (its roads name each place many times: one edge taken out, the others kept)."""
    (tmp_path / "domain.pddl").write_text(COURIER_DOMAIN)
    (tmp_path / "problem.pddl").write_text(_courier(6, 5, seed=1))
    task = load_task(tmp_path / "domain.pddl", tmp_path / "problem.pddl")
    state = frozenset(task.init)
    walks = Walks.of(task, state)
    for there in ("p0", "p3"):  # where the other courier is, and a place of its own
        moved = (state - {"(at a1 p1)"}) | {f"(at a1 {there})"}
        afresh = _edges(task.static | moved, walks.memo)
        changes = _edge_changes(state - moved, moved - state)
        assert changes.keys() == {"a1", "p1", there}
        for source, (taken, given) in changes.items():
            derived = walks.memo.changed(walks.edges.get(source, ()), taken, given)
            assert derived is afresh[source]
            assert walks.memo.changed(walks.edges.get(source, ()), taken, given) is derived


def _walked_paths(task, state, length):
    """Reference: every walk of 1..length edges from each unreached goal's last object, one edge at a time."""
    neighbours = {}
    for atom in state | task.static:
        name, args = atom.strip("()").split()[0], atom.strip("()").split()[1:]
        for i in range(len(args)):
            for j in range(len(args)):
                if i != j:
                    neighbours.setdefault(args[i], []).append((f"{name}:{i}>{j}", args[j]))
    paths = {}
    for goal in task.fluent_goal - state:
        name, args = goal.strip("()").split()[0], goal.strip("()").split()[1:]
        found, walks = set(), [((), args[-1])] if args else []
        for _ in range(length):
            walks = [((*labels, label), n) for labels, node in walks for label, n in neighbours.get(node, ())]
            found |= {labels for labels, node in walks if node == args[0]}
        paths[goal] = (name, tuple(sorted(found)))
    return paths


@WITH_ALIKE
def test_walks_met_halfway_are_every_walk_of_the_objects_graph(tmp_path, domain, problem):
    (tmp_path / "problem.pddl").write_text(problem)
    task = load_task(domain_file(domain), tmp_path / "problem.pddl")
    states = [child for _, child in _search_edges(task, steps=10, seed=3)]
    for length in (1, 2, 3, 4, 5):
        for state in states:
            assert goal_paths_of_each(task, state, length) == _walked_paths(task, state, length)
