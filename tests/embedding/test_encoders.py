"""WL and FSF encoders: invariances, the paper's FSF example, batching, save/load, refusals."""

import itertools
import json
import os
import pathlib
import random
import subprocess
import sys

import numpy as np
import pytest

from statecentric_jax.embedding import encoders
from statecentric_jax.embedding.encoders import FSF_DONT_CARE, FSF_PAD, WLSettings, fit_encoder, load_encoder
from statecentric_jax.errors import InputError
from statecentric_jax.planning.successors import random_walk
from statecentric_jax.planning.tasks import load_task

REPO = pathlib.Path(__file__).resolve().parents[2]
DOMAINS = REPO / "data" / "domains"


def problem_text(domain: str, name: str, objects, init, goal) -> str:
    return (
        f"(define (problem {name}) (:domain {domain}) (:objects {' '.join(objects)})\n"
        f"(:init {' '.join(init)})\n(:goal (and {' '.join(goal)})))\n"
    )


def make_task(tmp_path, domain_folder: str, name: str, objects, init, goal):
    domain_file = DOMAINS / domain_folder / "domain.pddl"
    domain_name = domain_file.read_text().split("(domain", 1)[1].split(")", 1)[0].strip()
    path = tmp_path / f"{name}.pddl"
    path.write_text(problem_text(domain_name, name, objects, init, goal))
    return load_task(domain_file, path)


def blocks_tower(tmp_path, name, objects, goal_tower=None):
    """All blocks on the table; the goal stacks `goal_tower` (bottom first, default: all in order)."""
    tower = goal_tower or objects
    init = ["(handempty)"] + [f"(ontable {o})" for o in objects] + [f"(clear {o})" for o in objects]
    goal = [f"(on {upper} {lower})" for lower, upper in itertools.pairwise(tower)]
    return make_task(tmp_path, "blocks", name, objects, init, goal)


def rename(atoms, mapping):
    return frozenset("(" + " ".join(mapping.get(t, t) for t in a[1:-1].split(" ")) + ")" for a in atoms)


def grid(tmp_path, name, width, height, drop=()):
    """A visitall grid, robot at the corner; `drop` removes (connected a b) static atoms."""
    cells = [f"c{x}-{y}" for y in range(height) for x in range(width)]
    links = [
        f"(connected c{x}-{y} c{x + dx}-{y + dy})"
        for y in range(height)
        for x in range(width)
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
        if 0 <= x + dx < width and 0 <= y + dy < height
    ]
    init = (
        ["(at-robot c0-0)", "(visited c0-0)"]
        + [f"(place {c})" for c in cells]
        + [link for link in links if link not in drop]
    )
    return make_task(tmp_path, "visitall", name, cells, init, [f"(visited {c})" for c in cells])


@pytest.fixture
def blocks4(tmp_path):
    return blocks_tower(tmp_path, "b4", ["a", "b", "c", "d"])


@pytest.fixture
def wl_blocks(blocks4):
    return fit_encoder("wl", "blocks", [(blocks4, random_walk(blocks4, 30, seed=0))])


def test_wl_is_invariant_to_renaming_and_reordering_objects(tmp_path, blocks4, wl_blocks):
    mapping = {"a": "zeta", "b": "alpha", "c": "mu", "d": "beta"}
    renamed = blocks_tower(tmp_path, "b4r", ["beta", "mu", "zeta", "alpha"], goal_tower=["zeta", "alpha", "mu", "beta"])
    states = random_walk(blocks4, 20, seed=1)
    original = wl_blocks.embed([(blocks4, s) for s in states])
    permuted = wl_blocks.embed([(renamed, rename(s, mapping)) for s in states])
    assert original.dtype == np.float32 and original.shape == (len(states), wl_blocks.dim)
    np.testing.assert_array_equal(original, permuted)
    np.testing.assert_array_equal(wl_blocks.embed_goals([blocks4]), wl_blocks.embed_goals([renamed]))
    assert len({row.tobytes() for row in original}) > 1  # the embedding does tell states apart


def test_wl_dimension_does_not_depend_on_problem_size(tmp_path, blocks4, wl_blocks):
    blocks17 = blocks_tower(tmp_path, "b17", [f"x{i}" for i in range(17)])
    states = random_walk(blocks17, 10, seed=2)
    big, unseen = wl_blocks.embed_with_unseen([(blocks17, s) for s in states])
    assert big.shape == (len(states), wl_blocks.dim)
    assert wl_blocks.embed_goals([blocks17]).shape == (1, wl_blocks.dim)
    assert 0 < unseen < 1  # 17-block graphs have colours a 4-block vocabulary lacks
    assert wl_blocks.embed_with_unseen([(blocks4, s) for s in random_walk(blocks4, 30, seed=0)])[1] == 0


def test_wl_batched_equals_one_by_one_across_tasks(tmp_path, blocks4, wl_blocks, monkeypatch):
    blocks6 = blocks_tower(tmp_path, "b6", list("abcdef"))
    pairs = [(t, s) for t, seed in ((blocks4, 3), (blocks6, 4), (blocks4, 5)) for s in random_walk(t, 8, seed)]
    random.Random(0).shuffle(pairs)  # tasks interleaved
    batched = wl_blocks.embed(pairs)
    alone = np.concatenate([wl_blocks.embed([pair]) for pair in pairs])
    np.testing.assert_array_equal(batched, alone)
    monkeypatch.setattr(encoders, "_WL_CALL_LIMIT", 5)  # several wlplan calls per batch
    np.testing.assert_array_equal(wl_blocks.embed(pairs), alone)
    assert wl_blocks.embed([]).shape == (0, wl_blocks.dim)


def test_wl_graph_contains_static_atoms(tmp_path):
    full = grid(tmp_path, "g", 3, 2)
    cut = grid(tmp_path, "g-cut", 3, 2, drop=("(connected c1-0 c2-0)", "(connected c2-0 c1-0)"))
    encoder = fit_encoder(
        "wl", "visitall", [(full, random_walk(full, 10, seed=0)), (cut, random_walk(cut, 10, seed=0))]
    )
    assert not np.array_equal(encoder.embed([(full, full.init)]), encoder.embed([(cut, cut.init)]))


def test_wl_goal_is_embedded_as_a_state(blocks4, wl_blocks):
    # The goal graph marks every goal atom achieved: it matches a state holding exactly the goal atoms.
    np.testing.assert_array_equal(wl_blocks.embed_goals([blocks4]), wl_blocks.embed([(blocks4, blocks4.goal)]))
    assert not np.array_equal(wl_blocks.embed_goals([blocks4]), wl_blocks.embed([(blocks4, blocks4.init)]))


def test_wl_normalized_rows_sum_to_one(blocks4):
    states = random_walk(blocks4, 10, seed=0)
    encoder = fit_encoder("wl", "blocks", [(blocks4, states)], WLSettings(normalize=True))
    np.testing.assert_allclose(encoder.embed([(blocks4, s) for s in states]).sum(axis=1), 1.0, rtol=1e-6)


def test_wl_vocabulary_with_goals_is_larger(blocks4):
    states = random_walk(blocks4, 10, seed=0)
    plain = fit_encoder("wl", "blocks", [(blocks4, states)])
    with_goals = fit_encoder("wl", "blocks", [(blocks4, states)], WLSettings(goals_in_vocabulary=True))
    assert with_goals.dim > plain.dim


@pytest.mark.parametrize("settings", [WLSettings(1, algorithm="lwl2"), WLSettings(graph="ploig")])
def test_other_wlplan_features_embed_through_wlplan_and_survive_saving(tmp_path, blocks4, settings):
    states = random_walk(blocks4, 20, seed=0)
    encoder = fit_encoder("wl", "blocks", [(blocks4, states)], settings)
    plain = fit_encoder("wl", "blocks", [(blocks4, states)], WLSettings(settings.iterations))
    assert encoder.dim != plain.dim  # the settings reach wlplan: other colours than WL on the ILG
    pairs = [(blocks4, s) for s in states]
    encoder.save(tmp_path / "encoder.json")
    loaded = load_encoder(tmp_path / "encoder.json", domain="blocks", kind="wl")
    assert loaded.settings == settings
    reference = loaded.embed(pairs)
    loaded.use_fast = False
    np.testing.assert_array_equal(reference, loaded.embed(pairs))
    np.testing.assert_array_equal(reference, encoder.embed(pairs))


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(algorithm="2wl"), "unknown WL algorithm '2wl'"),
        (dict(graph="pog"), "unknown WL graph 'pog'"),
        (dict(graph="ploig", normalize=True), "cannot be normalized"),
    ],
)
def test_unknown_wlplan_settings_are_refused(fields, message):
    with pytest.raises(InputError, match=message):
        WLSettings(**fields)


@pytest.mark.parametrize("kind", ["wl", "fsf"])
def test_save_load_round_trip(tmp_path, blocks4, kind):
    encoder = fit_encoder(kind, "blocks", [(blocks4, random_walk(blocks4, 20, seed=0))])
    encoder.save(tmp_path / "encoder.json")
    loaded = load_encoder(tmp_path / "encoder.json", domain="blocks", kind=kind)
    assert (loaded.domain, loaded.kind, loaded.dim) == ("blocks", kind, encoder.dim)
    pairs = [(blocks4, s) for s in random_walk(blocks4, 20, seed=9)]
    np.testing.assert_array_equal(loaded.embed(pairs), encoder.embed(pairs))
    np.testing.assert_array_equal(loaded.embed_goals([blocks4]), encoder.embed_goals([blocks4]))


def test_mismatched_or_broken_encoder_is_refused(tmp_path, blocks4, wl_blocks):
    path = tmp_path / "encoder.json"
    wl_blocks.save(path)
    with pytest.raises(InputError, match="built for domain 'blocks', not 'gripper'"):
        load_encoder(path, domain="gripper")
    with pytest.raises(InputError, match="encoder is WL, not FSF"):
        load_encoder(path, kind="fsf")
    gripper = make_task(
        tmp_path,
        "gripper",
        "g1",
        ["rooma", "ball1", "left"],
        ["(room rooma)", "(ball ball1)", "(gripper left)", "(at-robby rooma)", "(at ball1 rooma)", "(free left)"],
        ["(at ball1 rooma)"],
    )
    with pytest.raises(
        InputError, match="built for domain 'blocks' and cannot embed a problem of domain 'gripper-strips'"
    ):
        wl_blocks.embed([(gripper, gripper.init)])
    for text, reason in (("{not json", "corrupt encoder file"), ('{"x": 1}', "not a statecentric_jax encoder file")):
        path.write_text(text)
        with pytest.raises(InputError, match=reason) as e:
            load_encoder(path)
        assert str(e.value).startswith(str(path)) and "\n" not in str(e.value)
    data = {"statecentric": {"format": 1, "kind": "wl", "domain": "blocks", "predicates": [], "settings": {}}}
    path.write_text(json.dumps(data))  # our header, but no wlplan content
    with pytest.raises(InputError, match="corrupt WL encoder file"):
        load_encoder(path)
    with pytest.raises(InputError, match="encoder file not found"):
        load_encoder(tmp_path / "missing.json")


def test_wl_vocabulary_does_not_depend_on_hash_seed(tmp_path):
    script = (
        "import sys; sys.path.insert(0, '.'); import pathlib; import tests.embedding.test_encoders as t\n"
        "from statecentric_jax.embedding.encoders import fit_encoder\n"
        "out = pathlib.Path(sys.argv[1]); task = t.blocks_tower(out.parent, 'b' + out.stem, list('abcde'))\n"
        "fit_encoder('wl', 'blocks', [(task, t.random_walk(task, 15, seed=0))]).save(out)\n"
    )
    files = []
    for seed in ("1", "2"):
        out = tmp_path / f"enc{seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": seed}  # keeps PYTHONPATH installs importable
        subprocess.run([sys.executable, "-c", script, str(out)], cwd=REPO, env=env, check=True)
        data = json.loads(out.read_text())
        files.append((data["colour_hash"], data["colour_to_layer"]))
    assert files[0] == files[1]


# --------------------------------------------------------------------------- FSF


def test_fsf_paper_blocks_example(tmp_path, blocks4):
    blocks17 = blocks_tower(tmp_path, "b17", [f"x{i}" for i in range(17)])
    encoder = fit_encoder("fsf", "blocks", [(blocks4, []), (blocks17, [])])
    assert encoder.dim == 18
    state = frozenset({"(ontable a)", "(on b a)", "(holding c)", "(ontable d)", "(clear b)", "(clear d)"})
    expected = [0, 0, 1, -1, 0] + [FSF_PAD] * 13
    np.testing.assert_array_equal(encoder.embed([(blocks4, state)])[0], np.asarray(expected, np.float32))


def test_fsf_goals_use_dont_care_and_padding(tmp_path, blocks4):
    partial = make_task(
        tmp_path,
        "blocks",
        "b4g",
        list("abcd"),
        ["(handempty)"] + [f"(ontable {o})" for o in "abcd"] + [f"(clear {o})" for o in "abcd"],
        ["(on a b)", "(ontable b)"],
    )
    encoder = fit_encoder("fsf", "blocks", [(blocks4, []), (blocks_tower(tmp_path, "b6", list("abcdef")), [])])
    goals = encoder.embed_goals([partial, blocks4])
    np.testing.assert_array_equal(goals[0], [0, 2, 0, FSF_DONT_CARE, FSF_DONT_CARE, FSF_PAD, FSF_PAD])
    np.testing.assert_array_equal(goals[1], [0, FSF_DONT_CARE, 1, 2, 3, FSF_PAD, FSF_PAD])  # tower a<b<c<d


def test_fsf_gripper_slots_and_values(tmp_path):
    objects = ["rooma", "roomb", "ball1", "ball2", "left", "right"]  # slots 1..6
    init = [
        "(room rooma)",
        "(room roomb)",
        "(ball ball1)",
        "(ball ball2)",
        "(gripper left)",
        "(gripper right)",
        "(at-robby rooma)",
        "(at ball1 rooma)",
        "(at ball2 rooma)",
        "(free left)",
        "(free right)",
    ]
    task = make_task(tmp_path, "gripper", "g2", objects, init, ["(at ball1 roomb)"])
    encoder = fit_encoder("fsf", "gripper", [(task, [])])
    assert encoder.dim == 7
    picked = task.operator("(pick ball2 rooma right)").apply(task.init)
    rows = encoder.embed([(task, task.init), (task, picked)])
    np.testing.assert_array_equal(rows[0], [1, 0, 0, 1, 1, 0, 0])  # robot and balls in rooma, grippers free
    np.testing.assert_array_equal(rows[1], [1, 0, 0, 1, -6, 0, 4])  # ball2 (slot 4) carried by right (slot 6)
    dont_care = FSF_DONT_CARE
    np.testing.assert_array_equal(
        encoder.embed_goals([task])[0], [dont_care, dont_care, dont_care, 2, dont_care, dont_care, dont_care]
    )


def test_fsf_logistics_and_visitall_values(tmp_path):
    objects = ["apn1", "apt1", "pos1", "cit1", "tru1", "obj1"]  # slots 1..6
    init = [
        "(airplane apn1)",
        "(airport apt1)",
        "(location apt1)",
        "(location pos1)",
        "(city cit1)",
        "(truck tru1)",
        "(package obj1)",
        "(in-city apt1 cit1)",
        "(in-city pos1 cit1)",
        "(at apn1 apt1)",
        "(at tru1 pos1)",
        "(in obj1 apn1)",
    ]
    task = make_task(tmp_path, "logistics", "l1", objects, init, ["(at obj1 pos1)"])
    encoder = fit_encoder("fsf", "logistics", [(task, [])])
    np.testing.assert_array_equal(encoder.embed([(task, task.init)])[0], [0, 2, 0, 0, 0, 3, -1])
    np.testing.assert_array_equal(encoder.embed_goals([task])[0], [0] + [FSF_DONT_CARE] * 5 + [3])

    cells = grid(tmp_path, "v", 2, 1)
    visit = fit_encoder("fsf", "visitall", [(cells, [])])
    moved = cells.operator("(move c0-0 c1-0)").apply(cells.init)
    np.testing.assert_array_equal(visit.embed([(cells, cells.init), (cells, moved)]), [[1, 1, 0], [2, 1, 1]])
    np.testing.assert_array_equal(visit.embed_goals([cells])[0], [FSF_DONT_CARE, 1, 1])


def test_fsf_refuses_too_many_objects_and_other_domains(tmp_path, blocks4):
    encoder = fit_encoder("fsf", "blocks", [(blocks4, [])])
    blocks5 = blocks_tower(tmp_path, "b5", list("abcde"))
    with pytest.raises(InputError, match="b5.pddl: cannot be FSF-encoded: it has 5 objects for the encoder's 4 slots"):
        encoder.embed([(blocks5, blocks5.init)])
    with pytest.raises(InputError, match="FSF is defined only for blocks, gripper, logistics, visitall"):
        fit_encoder("fsf", "sokoban", [(blocks4, [])])
    with pytest.raises(InputError, match="unknown encoding 'gnn'"):
        fit_encoder("gnn", "blocks", [(blocks4, [])])


def test_fsf_batched_equals_one_by_one(tmp_path, blocks4):
    blocks6 = blocks_tower(tmp_path, "b6", list("abcdef"))
    encoder = fit_encoder("fsf", "blocks", [(blocks4, []), (blocks6, [])])
    pairs = [(t, s) for t in (blocks6, blocks4) for s in random_walk(t, 6, seed=1)]
    np.testing.assert_array_equal(encoder.embed(pairs), np.concatenate([encoder.embed([p]) for p in pairs]))
