"""wl_fast equals wlplan exactly: decoding-like walks, unseen colours, goals, uncached parents."""

import json
import random

import numpy as np
import pytest

from statecentric_jax.embedding import wl_fast
from statecentric_jax.embedding.encoders import WLSettings, fit_encoder, load_encoder
from statecentric_jax.embedding.wl_fast import FastWL, Vocabulary
from statecentric_jax.errors import InputError
from statecentric_jax.planning.successors import SuccessorGenerator, random_walk
from statecentric_jax.planning.tasks import atom_arguments, load_task
from statecentric_jax.problems import layout


def tasks(root, domain, split, count):
    domain_file = layout.domain_file(root, domain)
    return [load_task(domain_file, p) for p in layout.problem_files(root, domain, split)[:count]]


def decoding_calls(problems, steps):
    """Per step, one call with the successors of every problem's walk state (embedded the step before)."""
    generators = [SuccessorGenerator(task) for task in problems]
    walks = [random_walk(task, steps, i) for i, task in enumerate(problems)]
    calls = [[(task, task.init) for task in problems]]
    for step in range(steps):
        calls.append(
            [
                (t, nxt)
                for t, g, w in zip(problems, generators, walks)
                if step < len(w)
                for _, nxt in g.successors(w[step])
            ]
        )
    return calls


def wlplan_embed(encoder, pairs):
    encoder.use_fast = False
    try:
        return encoder.embed_with_unseen(pairs)
    finally:
        encoder.use_fast = True


@pytest.fixture(
    autouse=True,
    params=[(1 << 40, 1 << 30), (0, 0), (1000, 1 << 30)],
    ids=["copies", "changes-keys-from-starts", "both-keys-read"],
)
def colours_kept(request, monkeypatch):
    """Both ways of keeping derived states' colours, and both alternating: a copy per state (small derivations),
    and each state's changes from a dense row that it names (large ones). With changes, keys without counts are
    made from the starts' keys and the changed neighbours; alternating, they are read whole per node."""
    copy_colours, shared_reads = request.param
    monkeypatch.setattr(wl_fast, "_COPY_COLOURS", copy_colours)
    monkeypatch.setattr(wl_fast, "_SHARED_READS", shared_reads)


@pytest.fixture(autouse=True, params=[0, 1 << 30], ids=["atoms-near", "all-atoms"])
def object_neighbours(request, monkeypatch):
    """Objects refined from the atoms that their state's graph can hold, and from all of their atoms."""
    monkeypatch.setattr(wl_fast, "_NEAR_READS", request.param)
    monkeypatch.setattr(wl_fast, "_NEAR_STATES", 0)


@pytest.fixture(
    scope="module",
    params=[(domain, multiset) for domain in layout.DOMAINS for multiset in (True, False)],
    ids=lambda param: f"{param[0]}-{'multiset' if param[1] else 'set'}",
)
def fitted(request, data_root):
    """A WL encoder fitted on short walks of two small training problems, and larger problems to embed; keys
    with counts (multiset hash) and without (refined from the starts' keys and the changed neighbours)."""
    domain, multiset = request.param
    train = tasks(data_root, domain, "train", 2)
    walks = [(task, random_walk(task, 6, i)) for i, task in enumerate(train)]
    encoder = fit_encoder("wl", domain, walks, WLSettings(multiset_hash=multiset))
    return encoder, train[:1] + tasks(data_root, domain, "test-extrapolation", 1)


def test_decoding_pattern_equals_wlplan(fitted):
    encoder, problems = fitted
    calls = decoding_calls(problems, 12)
    fast = [encoder.embed_with_unseen(pairs) for pairs in calls]
    reference = [wlplan_embed(encoder, pairs) for pairs in calls]
    for (rows, unseen), (expected, expected_unseen) in zip(fast, reference):
        np.testing.assert_array_equal(rows, expected)
        assert unseen == expected_unseen
    assert max(unseen for _, unseen in reference) > 0  # the larger problem has colours the vocabulary lacks
    np.testing.assert_array_equal(
        encoder.embed_goals(problems), wlplan_embed(encoder, [(t, t.goal) for t in problems])[0]
    )


def test_states_derived_in_small_chunks_equal_wlplan(fitted, monkeypatch, tmp_path):
    encoder, problems = fitted
    monkeypatch.setattr(wl_fast, "DERIVE_NODES", 1)  # one start per batch
    encoder.save(tmp_path / "encoder.json")
    encoder = load_encoder(tmp_path / "encoder.json")  # nothing cached yet
    calls = decoding_calls(problems, 6)
    for pairs in calls:
        rows, unseen = encoder.embed_with_unseen(pairs)
        expected, expected_unseen = wlplan_embed(encoder, pairs)
        np.testing.assert_array_equal(rows, expected)
        assert unseen == expected_unseen


def test_states_without_cached_parent_equal_wlplan(fitted, tmp_path):
    encoder, problems = fitted
    pairs = [pair for pairs in decoding_calls(problems, 8) for pair in pairs]
    random.Random(0).shuffle(pairs)
    encoder.save(tmp_path / "encoder.json")
    vocabulary = Vocabulary.from_wlplan_json(json.loads((tmp_path / "encoder.json").read_text()))
    expected = wlplan_embed(encoder, pairs)[0]
    wrong_parents = [state for _, state in pairs[1:]] + [None]  # another state, of the same task or not
    for cache_bytes, batch, parents in ((0, 1, None), (1 << 30, 7, None), (1 << 30, 5, wrong_parents)):
        engine = FastWL(vocabulary, cache_bytes=cache_bytes)
        graphs = {id(task): engine.graph(task) for task in problems}
        rows = []
        for start in range(0, len(pairs), batch):
            chunk = [(graphs[id(task)], state) for task, state in pairs[start : start + batch]]
            rows.append(engine.embed(chunk, parents and parents[start : start + batch])[0])
        np.testing.assert_array_equal(np.concatenate(rows), expected)


def test_random_states_equal_wlplan(fitted):
    """Arbitrary atom sets: reachable atoms at random, and atoms no operator adds (the graph grows)."""
    encoder, problems = fitted
    rng = random.Random(1)
    pairs = []
    for task in problems:
        reachable = sorted(task.init | {atom for op in task.operators for atom in op.add})
        predicates = dict(task.predicates)
        others = [
            f"({name} {' '.join(rng.choice(task.objects) for _ in range(arity))})".replace(" )", ")")
            for name, arity in sorted(predicates.items())
            if name not in task.static_predicates
            for _ in range(3)
        ]
        for size in (0, 1, 3, len(reachable) // 4, len(reachable) // 2):
            pairs.append((task, frozenset(rng.sample(reachable, min(size, len(reachable))))))
        pairs.append((task, frozenset(rng.sample(reachable, 1) + rng.sample(others, 2))))
        pairs.append((task, task.goal | task.static))
    expected, expected_unseen = wlplan_embed(encoder, pairs)
    rows, unseen = encoder.embed_with_unseen(pairs)
    np.testing.assert_array_equal(rows, expected)
    assert unseen == expected_unseen
    again = np.concatenate([encoder.embed([pair], [pairs[0][1]]) for pair in pairs])  # cached; a useless hint
    np.testing.assert_array_equal(again, expected)


@pytest.mark.parametrize(
    "settings", [WLSettings(iterations=3), WLSettings(multiset_hash=False), WLSettings(normalize=True)]
)
def test_other_settings_equal_wlplan(data_root, settings):
    train = tasks(data_root, "gripper", "train", 2)
    encoder = fit_encoder("wl", "gripper", [(task, random_walk(task, 6, i)) for i, task in enumerate(train)], settings)
    problems = train + tasks(data_root, "gripper", "test-extrapolation", 1)
    pairs = [pair for pairs in decoding_calls(problems, 6) for pair in pairs]
    rows, unseen = encoder.embed_with_unseen(pairs)
    expected, expected_unseen = wlplan_embed(encoder, pairs)
    np.testing.assert_array_equal(rows, expected)
    assert unseen == expected_unseen > 0


def test_reloaded_encoder_equals_fitted_one(data_root, tmp_path):
    # wlplan numbers predicates in the order it is given but saves them in its own sorted order
    # (gripper: "at-robby" before "at"); the encoder must give them in that order.
    train = tasks(data_root, "gripper", "train", 2)
    encoder = fit_encoder("wl", "gripper", [(task, random_walk(task, 6, i)) for i, task in enumerate(train)])
    encoder.save(tmp_path / "encoder.json")
    loaded = load_encoder(tmp_path / "encoder.json")
    pairs = [(task, state) for i, task in enumerate(train) for state in random_walk(task, 10, i + 5)]
    expected = wlplan_embed(encoder, pairs)[0]
    np.testing.assert_array_equal(wlplan_embed(loaded, pairs)[0], expected)
    np.testing.assert_array_equal(loaded.embed(pairs), expected)


def test_unsupported_wlplan_configurations_are_declined(fitted, tmp_path):
    encoder, _ = fitted
    encoder.save(tmp_path / "encoder.json")
    data = json.loads((tmp_path / "encoder.json").read_text())
    vocabulary = Vocabulary.from_wlplan_json(data)
    assert vocabulary.dim == encoder.dim and vocabulary.iterations == 2
    for field, value in (("pruning", "collapse_layer"), ("graph_representation", "nilg"), ("feature_name", "2-lwl")):
        assert Vocabulary.from_wlplan_json({**data, field: value}) is None
    assert Vocabulary.from_wlplan_json({**data, "domain": {**data["domain"], "constant_objects": ["c"]}}) is None


def test_states_that_do_not_fit_the_problem_are_refused(data_root):
    task = tasks(data_root, "blocks", "train", 1)[0]
    encoder = fit_encoder("wl", "blocks", [(task, random_walk(task, 4, 0))])
    for atom, reason in (
        ("(on b1 nosuchblock)", "unknown object 'nosuchblock'"),
        ("(levitating b1)", "not an atom of the domain"),
    ):
        with pytest.raises(InputError, match=reason):
            encoder.embed([(task, task.init | {atom})])
    assert encoder.embed([(task, task.init | task.static)]).shape == (1, encoder.dim)  # static atoms may be included


def engine_for(encoder, tmp_path, cache_bytes):
    """A FastWL of the encoder's vocabulary, nothing cached."""
    encoder.save(tmp_path / "encoder.json")
    return FastWL(Vocabulary.from_wlplan_json(json.loads((tmp_path / "encoder.json").read_text())), cache_bytes)


def embed_from_parents(engine, task, calls):
    """Each call's (state, parent) pairs embedded in one engine call that names the parents."""
    graph = engine.graph(task)
    return [engine.embed([(graph, state) for state, _ in call], [parent for _, parent in call])[0] for call in calls]


@pytest.mark.parametrize("dense_share", [0, 8, 1 << 30])  # never, sometimes, always a dense row of its own
@pytest.mark.parametrize("cache_bytes", [0, 1 << 16, 1 << 30])  # evicted starts; some; none
def test_children_of_children_equal_wlplan(fitted, tmp_path, monkeypatch, dense_share, cache_bytes):
    """A walk's every state's successors, each derived from its parent (named), ten generations down: starts
    with changes of their own, starts whose dense rows were evicted (small caches), and states that keep a
    dense row of their own never, sometimes or always."""
    encoder, problems = fitted
    monkeypatch.setattr(wl_fast, "_DENSE_SHARE", dense_share)
    for seed, task in enumerate(problems):
        engine = engine_for(encoder, tmp_path, cache_bytes)
        generator = SuccessorGenerator(task)
        walk = random_walk(task, 10, seed + 3)
        calls = [[(task.init, None)]]
        calls += [[(nxt, state) for _, nxt in generator.successors(state)] for state in walk]
        for rows, call in zip(embed_from_parents(engine, task, calls), calls):
            np.testing.assert_array_equal(rows, wlplan_embed(encoder, [(task, state) for state, _ in call])[0])


@pytest.mark.parametrize("dense_share", [0, 1 << 30])
def test_changes_at_graph_borders_equal_wlplan(fitted, tmp_path, monkeypatch, dense_share):
    """Rows that change their graph's first and last fluent atoms, side by side in one call, then their children,
    which undo one of those changes and make another: an off-by-one between rows' colours shows here."""
    encoder, problems = fitted
    monkeypatch.setattr(wl_fast, "_DENSE_SHARE", dense_share)
    task = problems[-1]
    engine = engine_for(encoder, tmp_path, 1 << 30)
    graph = engine.graph(task)
    fluent = graph.node.keys() - set(task.objects) - task.static  # wlplan's states always hold the statics
    atoms = sorted(fluent, key=graph.node.__getitem__)
    first, middle, last = atoms[0], atoms[len(atoms) // 2], atoms[-1]
    toggled = [task.init ^ {first}, task.init ^ {last}, task.init ^ {first, last}]
    calls = [
        [(task.init, None)],
        [(state, task.init) for state in toggled + toggled[::-1]],
        [(state ^ {first, middle}, state) for state in toggled]
        + [(state ^ {last, middle}, state) for state in toggled],
    ]
    for rows, call in zip(embed_from_parents(engine, task, calls), calls):
        np.testing.assert_array_equal(rows, wlplan_embed(encoder, [(task, state) for state, _ in call])[0])


def test_children_keep_only_their_changes(fitted, tmp_path, monkeypatch):
    """Where states keep their changes, the children of one start share at most one dense row (the start's)."""
    encoder, problems = fitted
    monkeypatch.setattr(wl_fast, "_COPY_COLOURS", 0)
    task = problems[-1]
    engine = engine_for(encoder, tmp_path, 1 << 30)
    graph = engine.graph(task)
    state = random_walk(task, 3, 0)[-1]
    children = [nxt for _, nxt in SuccessorGenerator(task).successors(state)]
    engine.embed([(graph, state)])
    engine.embed([(graph, child) for child in children], [state] * len(children))
    batch = graph.records[children[0]][0]
    assert len(batch.dense) <= graph.size * (engine.vocabulary.iterations + 1)
    assert batch.overlay_bounds[-1] >= len(children)  # each child changed at least its own atoms


def test_objects_whose_atoms_all_change_equal_wlplan(fitted, tmp_path):
    """Siblings that each drop every atom of one object that their start holds and take up to two others of it
    (the object's atoms in their graphs are then only those they add), beside a sibling that changes nothing
    of it; then their children, which take the dropped atoms back and drop one they took."""
    encoder, problems = fitted
    task = problems[-1]
    engine = engine_for(encoder, tmp_path, 1 << 30)
    graph = engine.graph(task)
    fluent = sorted(graph.node.keys() - set(task.objects) - task.static, key=graph.node.__getitem__)
    start = task.init
    swapped = []
    for obj in task.objects[:4]:
        around = [atom for atom in fluent if obj in atom_arguments(atom)]
        held = start & set(around)
        taken = [atom for atom in around if atom not in start][:2]
        if held or taken:
            swapped.append((frozenset((start - held) | set(taken)), held, taken))
    assert swapped
    calls = [
        [(start, None)],
        [(child, start) for child, _, _ in swapped] + [(start ^ {fluent[-1]}, start)],
        [(child | held - set(taken[:1]), child) for child, held, taken in swapped],
    ]
    for rows, call in zip(embed_from_parents(engine, task, calls), calls):
        np.testing.assert_array_equal(rows, wlplan_embed(encoder, [(task, state) for state, _ in call])[0])
