"""build_dataset: arrays per split, the saved encoder, caching, FSF sizing, bad input."""

import itertools
import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from statecentric_jax.embedding import datasets, encoders
from statecentric_jax.embedding.datasets import build_dataset, build_datasets, load_dataset_encoder, load_split
from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import load_task
from tests.embedding.test_encoders import DOMAINS, blocks_tower, random_walk

REPO = pathlib.Path(__file__).resolve().parents[2]
SIZES = {"train": (3, 4), "validation": (5,), "test-extrapolation": (7,)}


def write_trajectories(plans_dir, root, split, steps=6, seed=0):
    """Random-walk trajectories, in the plan generator's format, for every problem of a split."""
    folder = plans_dir / "blocks" / split
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, problem in enumerate(sorted((root / "blocks" / split).glob("*.pddl"))):
        task = load_task(root / "blocks" / "domain.pddl", problem)
        states = random_walk(task, steps, seed + i)
        plan = [
            next(op.name for op in task.operators if op.apply(a) == b and op.pre <= a)
            for a, b in itertools.pairwise(states)
        ]
        record = {
            "problem": problem.stem,
            "problem_file": str(problem),
            "domain_file": str(root / "blocks" / "domain.pddl"),
            "plan": plan,
            "static": sorted(task.static),
            "states": [sorted(s) for s in states],
        }
        lines.append(json.dumps(record))
    (folder / "trajectories.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture
def root_and_plans(tmp_path):
    root, plans = tmp_path / "pddl", tmp_path / "plans"
    (root / "blocks").mkdir(parents=True)
    (root / "blocks" / "domain.pddl").write_text((DOMAINS / "blocks" / "domain.pddl").read_text())
    for split, sizes in SIZES.items():
        (root / "blocks" / split).mkdir()
        for n in sizes:
            blocks_tower(root / "blocks" / split, f"b{n}", [f"o{i}" for i in range(n)])
        write_trajectories(plans, root, split)
    return root, plans


def test_wl_dataset_arrays_and_encoder(tmp_path, root_and_plans):
    root, plans = root_and_plans
    out = tmp_path / "ds"
    built = build_dataset(root, plans, "blocks", "wl", out, ["train", "test-extrapolation"])
    encoder = load_dataset_encoder(out)
    assert (encoder.domain, encoder.kind) == ("blocks", "wl")
    train = built["train"]
    assert (train.domain, train.encoding, train.split, train.problems, train.num_objects) == (
        "blocks",
        "wl",
        "train",
        ["b3", "b4"],
        [3, 4],
    )
    assert [t.shape for t in train.trajectories] == [(7, encoder.dim), (7, encoder.dim)]
    assert train.goals.shape == (2, encoder.dim) and train.goals.dtype == np.float32
    assert train.unseen_fraction == 0 and built["test-extrapolation"].unseen_fraction > 0
    records = [
        json.loads(line) for line in (plans / "blocks" / "train" / "trajectories.jsonl").read_text().splitlines()
    ]
    task = load_task(root / "blocks" / "domain.pddl", root / "blocks" / "train" / "b4.pddl")
    np.testing.assert_array_equal(
        train.trajectories[1], encoder.embed([(task, frozenset(s)) for s in records[1]["states"]])
    )
    np.testing.assert_array_equal(train.goals[1], encoder.embed_goals([task])[0])
    again = load_split(out, "test-extrapolation")
    np.testing.assert_array_equal(again.goals, built["test-extrapolation"].goals)


def test_fsf_slots_cover_every_split_of_the_root(tmp_path, root_and_plans):
    root, plans = root_and_plans
    built = build_dataset(root, plans, "blocks", "fsf", tmp_path / "ds", ["train"])
    assert built["train"].goals.shape[1] == 7 + 1  # sized by the 7-block extrapolation problem
    assert built["train"].trajectories[0][0, 4] == encoders.FSF_PAD


def test_cache_redoes_only_what_changed(tmp_path, root_and_plans, monkeypatch):
    root, plans = root_and_plans
    out, splits = tmp_path / "ds", ["train", "validation"]
    build_dataset(root, plans, "blocks", "wl", out, splits)
    embedded = []
    original = datasets._embed_split
    monkeypatch.setattr(datasets, "_embed_split", lambda *a: embedded.append(a[4]) or original(*a))
    fits = []
    original_fit = datasets.fit_encoder
    monkeypatch.setattr(datasets, "fit_encoder", lambda *a, **k: fits.append(a[0]) or original_fit(*a, **k))

    build_dataset(root, plans, "blocks", "wl", out, splits)
    assert (embedded, fits) == ([], [])
    write_trajectories(plans, root, "validation", seed=5)
    build_dataset(root, plans, "blocks", "wl", out, splits)
    assert (embedded, fits) == (["validation"], [])
    write_trajectories(plans, root, "train", steps=8)
    rebuilt = build_dataset(root, plans, "blocks", "wl", out, splits)
    assert (embedded, fits) == (["validation", "train", "validation"], ["wl"])
    assert len(rebuilt["train"].trajectories[0]) == 9

    # Train changes back, with only train rebuilt in between: validation was embedded by another
    # encoder than the one now on disk, so it is redone rather than served from the cache.
    train_file = plans / "blocks" / "train" / "trajectories.jsonl"
    newer = train_file.read_text()
    write_trajectories(plans, root, "train", steps=10)
    build_dataset(root, plans, "blocks", "wl", out, ["train"])
    train_file.write_text(newer)
    del embedded[:]
    build_dataset(root, plans, "blocks", "wl", out, ["validation"])
    assert embedded == ["validation"]


def test_bad_input_is_one_clear_error(tmp_path, root_and_plans):
    root, plans = root_and_plans
    with pytest.raises(InputError, match="trajectories.jsonl: no trajectories here: run launch/generate_plans.py"):
        build_dataset(root, plans, "blocks", "wl", tmp_path / "ds", ["test-interpolation"])
    with pytest.raises(InputError, match="unknown encoding 'gnn'"):
        build_dataset(root, plans, "blocks", "gnn", tmp_path / "ds", ["train"])
    (root / "blocks" / "validation" / "b5.pddl").rename(root / "blocks" / "validation" / "other.pddl")
    with pytest.raises(InputError, match="problem 'b5' is not in"):
        build_dataset(root, plans, "blocks", "wl", tmp_path / "ds", ["validation"])
    (tmp_path / "ds" / "train.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="train.npz: corrupt dataset file"):
        load_split(tmp_path / "ds", "train")


def test_launch_script_builds_and_reports(tmp_path, root_and_plans):
    root, plans = root_and_plans
    command = [
        sys.executable,
        "launch/build_dataset.py",
        f"--pddl_root={root}",
        f"--plans_dir={plans}",
        f"--out_dir={tmp_path / 'ds'}",
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "| blocks | wl |" in done.stdout and "| blocks | fsf | 8 |" in done.stdout
    assert (tmp_path / "ds" / "blocks" / "fsf" / "test-extrapolation.npz").is_file()
    failed = subprocess.run(
        [*command, "--domains=gripper", "--splits=train"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert failed.returncode == 2
    assert failed.stderr.strip().splitlines()[-1].startswith("error: ") and "no domain 'gripper'" in failed.stderr


def test_build_datasets_table(tmp_path, root_and_plans):
    root, plans = root_and_plans
    lines = build_datasets(root, plans, tmp_path / "ds", encodings=["fsf"], splits=["train"])
    assert lines[2] == "| blocks | fsf | 8 | train 2 | - |"


def test_malformed_trajectories_and_problems_are_one_clear_error(tmp_path, root_and_plans):
    root, plans = root_and_plans
    path = plans / "blocks" / "train" / "trajectories.jsonl"
    good = path.read_text()

    def fails(match):
        with pytest.raises(InputError, match=match):
            build_dataset(root, plans, "blocks", "wl", tmp_path / "ds", ["train"])

    path.write_bytes(b"\xff\xfe\x00binary")
    fails("trajectories.jsonl: not a trajectories file")
    record = json.loads(good.splitlines()[0])
    path.write_text(json.dumps({**record, "states": 5}) + "\n")
    fails("trajectories.jsonl: line 1: plan, static and states must be lists")
    path.write_text(json.dumps({**record, "states": [[*s, "(clear zz)"] for s in record["states"]]}) + "\n")
    fails("unknown object")
    path.write_text(json.dumps({**record, "states": record["states"][::-1]}) + "\n")  # tampered: reversed
    fails("problem 'b3': state 0 is not the problem's initial state: regenerate the plans")
    states = [record["states"][0], record["states"][0], *record["states"][2:]]  # a step that is no transition
    path.write_text(json.dumps({**record, "states": states}) + "\n")
    fails(re.escape(f"problem 'b3': state 1 is not the result of step 1, {record['plan'][0]}"))
    path.write_text(json.dumps({**record, "plan": record["plan"][::-1]}) + "\n")
    fails("problem 'b3': its plan does not replay")
    path.write_text(good)
    (root / "blocks" / "train" / "dangling.pddl").symlink_to(tmp_path / "missing.pddl")
    fails("dangling.pddl: not a readable file")


@pytest.mark.parametrize("garbage", [b"\xff\xfe\x00\x80", b"not a key"])
def test_garbage_in_the_encoder_key_refits_binary_or_not(tmp_path, root_and_plans, monkeypatch, garbage):
    root, plans = root_and_plans
    out = tmp_path / "ds"
    first = build_dataset(root, plans, "blocks", "wl", out, ["train"])
    key = (out / "encoder.key").read_bytes()
    (out / "encoder.key").write_bytes(garbage)
    fits = []
    original_fit = datasets.fit_encoder
    monkeypatch.setattr(datasets, "fit_encoder", lambda *a, **k: fits.append(a[0]) or original_fit(*a, **k))
    again = build_dataset(root, plans, "blocks", "wl", out, ["train"])
    assert fits == ["wl"] and (out / "encoder.key").read_bytes() == key
    assert np.array_equal(np.concatenate(again["train"].trajectories), np.concatenate(first["train"].trajectories))
