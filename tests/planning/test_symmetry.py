"""Successors kept one per orbit of twin objects, checked against the permutation that maps each pruned
operator onto the one kept for it: that permutation must fix the state, the statics and the goal, and
map the pruned child onto the kept one."""

import random

import pytest

from statecentric_jax.planning.relaxed import RelaxedReachability
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.symmetry import Twins
from statecentric_jax.planning.tasks import Task, load_task
from statecentric_jax.problems import layout
from tests.embedding.test_encoders import rename


def _permutation(pruned: str, kept: str) -> dict[str, str]:
    """The objects of `pruned` renamed to those of `kept`, position by position, closed into a permutation."""
    there = dict(zip(pruned[1:-1].split()[1:], kept[1:-1].split()[1:]))
    assert pruned.split()[0] == kept.split()[0] and len(set(there.values())) == len(there)
    back = sorted(set(there.values()) - set(there))
    for target, source in zip(sorted(set(there) - set(there.values())), back):
        there[source] = target
    return there


def _check_orbits(task: Task, state: frozenset[str]) -> tuple[int, int]:
    everything, pruning = SuccessorGenerator(task), SuccessorGenerator(task, prune_symmetric=True)
    children = {op.name: child for op, child in everything.successors(state)}
    kept = {op.name: child for op, child in pruning.successors(state)}
    assert set(kept) <= set(children)
    facts = state | task.static | task.goal
    for name, child in children.items():
        (representative,) = pruning.representatives(state, frozenset([name]))
        assert representative in kept
        permutation = _permutation(name, representative)
        assert not {source for source, target in permutation.items() if source != target} & task.constants
        assert rename(facts, permutation) == facts and rename(task.goal, permutation) == task.goal
        assert rename(child, permutation) == kept[representative]
    return len(children), len(kept)


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_each_pruned_successor_is_a_permuted_kept_one(data_root, domain):
    task = load_task(layout.domain_file(data_root, domain), layout.problem_files(data_root, domain, "validation")[-1])
    rng, state = random.Random(0), task.init
    generated = kept = 0
    for _ in range(30):
        counts = _check_orbits(task, state)
        generated, kept = generated + counts[0], kept + counts[1]
        state = rng.choice(SuccessorGenerator(task).successors(state))[1]
    if domain in ("gripper", "logistics"):  # balls in one room, packages in one place: twins
        assert kept < generated


def test_helpful_actions_stand_for_kept_successors(data_root):
    task = load_task(
        layout.domain_file(data_root, "gripper"), layout.problem_files(data_root, "gripper", "validation")[-1]
    )
    pruning = SuccessorGenerator(task, prune_symmetric=True)
    _, helpful = RelaxedReachability(task).relaxed_plan(task.init)
    kept = {op.name for op, _ in pruning.successors(task.init)}
    standing = pruning.representatives(task.init, frozenset(helpful))
    assert standing and standing <= kept
    assert len(standing) < len(helpful)  # picking up any of the balls in the first room is one orbit


def test_a_constant_is_never_a_twin(tmp_path):
    domain = tmp_path / "domain.pddl"
    domain.write_text(
        "(define (domain depot) (:requirements :strips :typing) (:types place thing) (:constants depot - place)"
        " (:predicates (at ?t - thing ?p - place) (done ?t - thing))"
        " (:action carry :parameters (?t - thing ?from ?to - place) :precondition (at ?t ?from)"
        "  :effect (and (at ?t ?to) (not (at ?t ?from))))"
        " (:action finish :parameters (?t - thing) :precondition (at ?t depot) :effect (done ?t)))"
    )
    problem = tmp_path / "p.pddl"
    problem.write_text(
        "(define (problem p) (:domain depot) (:objects field yard - place a b - thing)"
        " (:init (at a field) (at b field)) (:goal (and (done a) (done b))))"
    )
    task = load_task(domain, problem)
    generated, kept = _check_orbits(task, task.init)
    # a and b are twins; the yard and the depot would be, but for the action that names the depot
    assert (generated, kept) == (6, 3)
    moved = SuccessorGenerator(task).successors(task.init)[0][1]
    _check_orbits(task, moved)


@pytest.mark.parametrize("domain", ["gripper", "logistics"])
def test_classes_asked_along_a_search_are_those_of_each_state_alone(data_root, domain):
    task = load_task(layout.domain_file(data_root, domain), layout.problem_files(data_root, domain, "validation")[-1])
    generator, twins, rng = SuccessorGenerator(task), Twins(task), random.Random(1)
    states, changed = [task.init], 0
    for _ in range(40):  # a walk, with jumps back to states seen before (a search's next node is often not a child)
        states.append(rng.choice([*generator.successors(states[-1]), *((None, s) for s in states[::7])])[1])
    for state in states:
        alone = Twins(task).classes(state)
        assert twins.classes(state) == alone
        changed += alone != Twins(task).classes(task.init)
    assert changed  # the walk reaches states whose twins differ from the start's
