"""Packed states: a round trip gives the state back, equal states, however built, share one key, and a
set of them skips exactly its states among the successors."""

import random

import pytest

from statecentric_jax.planning import packing
from statecentric_jax.planning.packing import PackedStates, StatePacker
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout


@pytest.fixture(params=["masks", "numbers", "numbered keys"])
def representation(request, monkeypatch):
    """Every way of keeping keys and effects: bits with precomputed masks (few atoms), bits with atom
    numbers (many atoms), and the sorted numbers' bytes (many atoms, few of them held)."""
    if request.param != "masks":
        monkeypatch.setattr(packing, "PRECOMPUTED_ATOMS", 0)
    if request.param == "numbered keys":
        monkeypatch.setattr(packing, "NUMBERED_KEYS_BELOW", float("inf"))
    return request.param


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_round_trip_and_one_key_per_state_on_random_walks(data_root, domain, representation):
    task = load_task(layout.domain_file(data_root, domain), layout.problem_files(data_root, domain, "validation")[-1])
    packer, generator, rng = StatePacker(task), SuccessorGenerator(task), random.Random(0)
    seen, state = PackedStates(packer), task.init
    keys: dict[frozenset, packing.Key] = {}
    for _ in range(80):
        key = packer.pack(state)
        assert packer.unpack(key) == state
        assert packer.pack(frozenset(sorted(state, reverse=True))) == key  # another insertion order
        assert keys.setdefault(state, key) == key and len(set(keys.values())) == len(keys)
        seen.add(key)
        assert state in seen and key in seen
        state = rng.choice(generator.successors(state))[1]
    assert task.init in seen and frozenset() not in seen


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_both_representations_give_the_same_keys(data_root, domain, monkeypatch):
    task = load_task(layout.domain_file(data_root, domain), layout.problem_files(data_root, domain, "validation")[-1])
    states = [task.init, *(nxt for _, nxt in SuccessorGenerator(task).successors(task.init))]
    masks = StatePacker(task)
    monkeypatch.setattr(packing, "PRECOMPUTED_ATOMS", 0)
    numbers = StatePacker(task)
    monkeypatch.setattr(packing, "NUMBERED_KEYS_BELOW", float("inf"))
    numbered = StatePacker(task)
    assert [masks.pack(s) for s in states] == [numbers.pack(s) for s in states]
    assert all(isinstance(numbered.pack(s), bytes) for s in states)
    assert [masks.unpack(masks.pack(s)) for s in states] == [numbered.unpack(numbered.pack(s)) for s in states]
    operators = range(len(task.operators))
    for state in states:  # every operator's effects, applicable or not, from states that differ
        key, numbered_key = masks.pack(state), numbered.pack(state)
        assert [masks.successor(key, i) for i in operators] == [numbers.successor(key, i) for i in operators]
        assert [masks.unpack(masks.successor(key, i)) for i in operators] == [
            numbered.unpack(numbered.successor(numbered_key, i)) for i in operators
        ]


def test_an_atom_the_task_never_holds_is_refused(data_root, representation):
    problem_file = layout.problem_files(data_root, "blocks", "validation")[0]
    task = load_task(layout.domain_file(data_root, "blocks"), problem_file)
    with pytest.raises(KeyError):
        StatePacker(task).pack(task.init | {"(no-such-atom)"})


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_a_set_of_packed_states_skips_exactly_its_own_successors(data_root, domain, representation):
    """The keys of successors, derived from the parent's key and the operators' effects, find
    exactly the successors whose states are in the set (and the others come out whole)."""
    task = load_task(layout.domain_file(data_root, domain), layout.problem_files(data_root, domain, "validation")[-1])
    packer, generator, rng = StatePacker(task), SuccessorGenerator(task), random.Random(1)
    seen, states, state = PackedStates(packer), set(), task.init
    skipped = 0
    for _ in range(120):
        successors = generator.successors(state)
        expected = [(op, nxt) for op, nxt in successors if nxt not in states]
        assert generator.successors(state, seen) == expected
        skipped += len(successors) - len(expected)
        if rng.random() < 0.7:  # most states go into the set; the walk also reaches some that do not
            seen.add(packer.pack(state))
            states.add(state)
        state = rng.choice(successors)[1]
    assert skipped > 0


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_remembered_keys_are_the_keys_computed_afresh(data_root, domain, representation, monkeypatch):
    """Keys remembered for built successors and unpacked states (even past the memory's size) equal
    those a packer with nothing remembered computes."""
    monkeypatch.setattr(packing, "KNOWN_KEYS", 7)
    task = load_task(layout.domain_file(data_root, domain), layout.problem_files(data_root, domain, "validation")[-1])
    packer, fresh, generator = StatePacker(task), StatePacker(task), SuccessorGenerator(task)
    seen, state, rng = PackedStates(packer), task.init, random.Random(2)
    for _ in range(40):
        seen.add(packer.pack(state))
        successors = generator.successors(state, seen)
        if not successors:
            break
        keys = [packer.pack(nxt) for _, nxt in successors]
        assert keys == [fresh.pack(nxt) for _, nxt in successors]
        state = packer.unpack(rng.choice(keys))
        assert packer.pack(state) == fresh.pack(state)
