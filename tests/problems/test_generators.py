"""Problem generators and the bundled data: deterministic, loadable, solvable, the paper's sizes."""

import collections
import pathlib
import re
import subprocess
import sys

import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import generators, layout
from statecentric_jax.problems.domains import PDDL_NAMES, domain_text

REPO = pathlib.Path(__file__).resolve().parents[2]
PAPER = (
    pathlib.Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "paper-splits"
)  # ../shared beside the clone
IPC = PAPER.parent / "ipc2023-learning"
PAPER_FOLDERS = {
    "blocks": "blocks",
    "gripper": "gripper",
    "logistics": "logistics",
    "visitall": "visitall-from-everywhere",
}

# File names encode the generator arguments.
NAME_PATTERNS = {
    "blocks": r"blocks-n(?P<n>\d+)",
    "gripper": r"gripper-r(?P<n_rooms>\d+)-b(?P<n_balls>\d+)",
    "logistics": r"logistics-c(?P<cities>\d+)-l(?P<locations_per_city>\d+)-p(?P<packages>\d+)"
    r"-a(?P<airplanes>\d+)-g(?P<goals>\d+)",
    "visitall": r"visitall-w(?P<w>\d+)h(?P<h>\d+)",
}
# The paper's tab:dataset_stats: problem count and complexity values (blocks, balls,
# goals, cells) per split. VisitAll follows the paper's files, which also hold 7-cell
# training grids and a 22-cell (2x11) extrapolation grid that the table leaves out.
PAPER_TABLE = {
    "blocks": [(9, {4, 6, 7}), (3, {8}), (3, {5}), (20, set(range(9, 18)))],
    "gripper": [(4, {2, 4, 6, 8}), (2, {9, 10}), (3, {3, 5, 7}), (16, set(range(12, 43, 2)))],
    "logistics": [(12, {1, 3, 5}), (4, {6}), (9, {2, 4}), (18, set(range(7, 16)))],
    "visitall": [(207, {1, 3, 4, 6, 7, 10, 11, 12, 14, 16}), (24, {18, 20}), (37, {2, 5, 8, 9, 15}), (219, None)],
}


def size_of(domain, file_name):
    match = re.fullmatch(NAME_PATTERNS[domain] + r"-s\d\d\.pddl", file_name)
    assert match, file_name
    return {key: int(value) for key, value in match.groupdict().items()}


COMPLEXITY = {  # the table's complexity value of a problem, from its generator arguments
    "blocks": lambda size: size["n"],
    "gripper": lambda size: size["n_balls"],
    "logistics": lambda size: size["goals"],
    "visitall": lambda size: size["w"] * size["h"],
}


def count(task, predicate):
    return sum(atom.startswith(f"({predicate} ") for atom in task.static | task.init)


def check_size(domain, task, size):
    """The task has the number of objects and goal atoms its generator was asked for."""
    if domain == "blocks":
        assert len(task.objects) == size["n"] and count(task, "ontable") >= 1
    elif domain == "gripper":
        assert (count(task, "ball"), count(task, "room")) == (size["n_balls"], size["n_rooms"])
        assert len(task.goal) == size["n_balls"]
    elif domain == "logistics":
        assert len(task.goal) == size["goals"]
        assert count(task, "package") == size["packages"] and count(task, "airplane") == size["airplanes"]
        assert count(task, "city") == count(task, "truck") == count(task, "airport") == size["cities"]
        assert count(task, "location") == size["cities"] * size["locations_per_city"]
    else:
        assert count(task, "place") == len(task.goal) == size["w"] * size["h"]


def bfs_plan_length(task, max_states=100_000):
    """Length of a shortest plan (breadth-first search), or None if the goal is unreachable."""
    successors = SuccessorGenerator(task).successors
    layer, seen, depth = [task.init], {task.init}, 0
    while layer:
        if any(task.goal_reached(state) for state in layer):
            return depth
        layer = [nxt for state in layer for _, nxt in successors(state) if nxt not in seen and not seen.add(nxt)]
        assert len(seen) <= max_states, "search space too big for a test"
        depth += 1
    return None


def load_text(tmp_path, domain, text, name="p.pddl"):
    (tmp_path / "domain.pddl").write_text(domain_text(domain))
    (tmp_path / name).write_text(text)
    return load_task(tmp_path / "domain.pddl", tmp_path / name)


def test_generators_are_deterministic_per_seed():
    calls = {
        "blocks": lambda seed: generators.blocks(6, seed=seed),
        "gripper": lambda seed: generators.gripper(5, n_rooms=3, seed=seed),
        "logistics": lambda seed: generators.logistics(2, 3, 5, 1, 3, seed=seed),
    }
    for make in calls.values():
        assert make(0) == make(0)
        assert make(0) != make(1)
    for domain in ("blocks", "logistics", "visitall"):
        assert generators.generate_split(domain, "train", 3) == generators.generate_split(domain, "train", 3)
        assert generators.generate_split(domain, "train", 3) != generators.generate_split(domain, "train", 4)
    assert generators.gripper(4) == generators.gripper(4, seed=9)  # IPC gripper has nothing random


LOGISTICS_ARGS = ("cities", "locations_per_city", "packages", "airplanes", "goals")
SIZES = [
    ("blocks", {"n": 2}),
    ("blocks", {"n": 9}),
    ("gripper", {"n_balls": 1, "n_rooms": 2}),
    ("gripper", {"n_balls": 6, "n_rooms": 2}),
    ("gripper", {"n_balls": 5, "n_rooms": 4}),
    ("logistics", dict(zip(LOGISTICS_ARGS, (1, 2, 1, 1, 1)))),
    ("logistics", dict(zip(LOGISTICS_ARGS, (3, 3, 7, 2, 7)))),
    ("logistics", dict(zip(LOGISTICS_ARGS, (2, 1, 4, 1, 0)))),
    ("visitall", {"w": 1, "h": 1}),
    ("visitall", {"w": 4, "h": 3}),
]


@pytest.mark.parametrize("domain, size", SIZES)
def test_generated_problems_load_with_requested_size(tmp_path, domain, size):
    if domain == "visitall":
        text = generators.visitall(**size, start=(size["w"] - 1, 0))
    else:
        text = getattr(generators, domain)(**size, seed=1)
    task = load_text(tmp_path, domain, text)
    assert task.domain_name == PDDL_NAMES[domain]
    check_size(domain, task, size)


def test_gripper_with_more_rooms_moves_every_ball(tmp_path):
    task = load_text(tmp_path, "gripper", generators.gripper(6, n_rooms=4, seed=2))
    assert not task.goal & task.init
    assert len(task.missing_goal(task.init)) == 6


@pytest.mark.skipif(not IPC.is_dir(), reason="the IPC 2023 learning track is not on this machine")
def test_problems_for_ipc_domain_files_load_and_are_solvable(tmp_path):
    for domain, text in (
        ("blocksworld", generators.ipc_blocksworld(5, seed=3)),
        ("ferry", generators.ipc_ferry(3, 4, seed=3)),
        ("miconic", generators.ipc_miconic(3, 5, seed=3)),
        ("rovers", generators.ipc_rovers(2, 4, 1, 2, seed=3)),
        ("satellite", generators.ipc_satellite(2, 3, 2, 3, seed=3)),
    ):
        (tmp_path / "p.pddl").write_text(text)
        task = load_task(IPC / domain / "domain.pddl", tmp_path / "p.pddl")
        assert task.domain_name == domain.rstrip("s") and bfs_plan_length(task)  # rovers' domain is "rover"
    assert generators.ipc_ferry(3, 4, seed=3) != generators.ipc_ferry(3, 4, seed=4)
    assert generators.ipc_miconic(3, 5, seed=3) != generators.ipc_miconic(3, 5, seed=4)
    assert generators.ipc_rovers(2, 4, 1, 2, seed=3) != generators.ipc_rovers(2, 4, 1, 2, seed=4)
    assert generators.ipc_satellite(2, 3, 2, 3, seed=3) != generators.ipc_satellite(2, 3, 2, 3, seed=4)
    renamed = generators.ipc_blocksworld(6, seed=1).replace("on-table", "ontable").replace("arm-empty", "handempty")
    assert renamed.split("(:objects")[1] == generators.blocks(6, seed=1).split("(:objects")[1]


IMPOSSIBLE = [
    lambda: generators.blocks(1),  # one block: the goal cannot differ from the start
    lambda: generators.gripper(2, n_rooms=1),
    lambda: generators.logistics(1, 1, 2, 1, 1),  # one location: no package can move
    lambda: generators.visitall(2, 2, (2, 0)),
    lambda: generators.ipc_miconic(2, 1),  # one floor: nobody can travel
    lambda: generators.ipc_rovers(1, 4, 0, 2),  # no camera: no image can be taken
    lambda: generators.ipc_satellite(1, 0, 1, 1),  # no instrument: no image can be taken
]


@pytest.mark.parametrize("make", IMPOSSIBLE)
def test_impossible_sizes_are_refused(make):
    with pytest.raises(ValueError):
        make()


def test_random_towers_are_uniform():
    """All 13 configurations of 3 blocks come up about equally often (fixed seed: no flakiness)."""
    rng = generators.random.Random(0)
    seen = collections.Counter(
        frozenset(map(tuple, generators._random_towers(rng, ["a", "b", "c"]))) for _ in range(13_000)
    )
    assert len(seen) == 13
    assert all(850 < n < 1150 for n in seen.values()), seen


SMALL = {  # (split, file name prefix) of the smallest dataset problems of each domain
    "blocks": [("train", "blocks-n04")],
    "gripper": [("train", "gripper-r02-b02"), ("train", "gripper-r02-b04"), ("test-interpolation", "gripper-r02-b03")],
    "logistics": [("train", "logistics-c02-l02-p04-a01-g01")],
    "visitall": [("train", "visitall-w01h0"), ("train", "visitall-w02h02"), ("test-interpolation", "visitall-w02h01")],
}


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_smallest_dataset_problems_are_solvable(tmp_path, domain):
    solved = 0
    for split, prefix in SMALL[domain]:
        for file_name, text in generators.generate_split(domain, split, seed=0):
            if file_name.startswith(prefix):
                length = bfs_plan_length(load_text(tmp_path, domain, text, file_name))
                assert length is not None and (length > 0 or file_name.startswith("visitall-w01h01")), file_name
                solved += 1
    assert solved >= 3


def test_random_gripper_and_logistics_are_solvable(tmp_path):
    for seed in range(3):
        assert bfs_plan_length(load_text(tmp_path, "gripper", generators.gripper(2, n_rooms=3, seed=seed)))
        assert bfs_plan_length(load_text(tmp_path, "logistics", generators.logistics(3, 1, 1, 1, 1, seed=seed)))


@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_split_counts_and_sizes_match_the_paper_table(domain):
    for split, (expected_count, expected_values) in zip(layout.SPLITS, PAPER_TABLE[domain]):
        files = generators.generate_split(domain, split, seed=0)
        assert len(files) == expected_count == sum(n for _, n in generators.DATASET[domain][split])
        values = {COMPLEXITY[domain](size_of(domain, name)) for name, _ in files}
        if expected_values is not None:
            assert values == expected_values, split
        texts = [text.split("\n", 1)[1] for _, text in files]  # without the (problem NAME) line
        assert len(set(texts)) == len(texts), f"{split}: duplicate problems"


def test_bad_names_raise_input_error_and_write_nothing(tmp_path):
    with pytest.raises(InputError, match="unknown domain 'sokoban'"):
        generators.generate_split("sokoban", "train")
    with pytest.raises(InputError, match="unknown split 'tests'"):
        generators.write_dataset(tmp_path, ["blocks"], ["train", "tests"])
    assert not any(tmp_path.iterdir())


def test_write_dataset_keeps_unchanged_files_and_removes_stale_ones(tmp_path):
    written = generators.write_dataset(tmp_path, ["blocks"], ["validation"], seed=0)
    assert [p.name for p in written] == [f"blocks-n08-s0{i}.pddl" for i in (1, 2, 3)]
    stale = tmp_path / "domains" / "blocks" / "validation" / "blocks-n99-s01.pddl"
    stale.write_text("old")
    before = written[0].stat().st_mtime_ns
    generators.write_dataset(tmp_path, ["blocks"], ["validation"], seed=0)
    assert not stale.exists() and written[0].stat().st_mtime_ns == before
    assert layout.problem_files(tmp_path, "blocks", "validation") == written
    generators.write_dataset(tmp_path, ["blocks"], ["validation"], seed=1)
    assert written[0].read_text() != generators.generate_split("blocks", "validation", 0)[0][1]


def test_launch_script_writes_a_pddl_root_or_fails_in_one_line(tmp_path):
    script = str(REPO / "launch" / "generate_problems.py")
    ok = subprocess.run(
        [sys.executable, script, f"--out_root={tmp_path}", "--domains=gripper", "--splits=validation"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0, ok.stderr
    assert [p.name for p in layout.problem_files(tmp_path, "gripper", "validation")] == [
        "gripper-r02-b09-s01.pddl",
        "gripper-r02-b10-s01.pddl",
    ]
    bad = subprocess.run(
        [sys.executable, script, f"--out_root={tmp_path}", "--splits=nope"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "error: unknown split 'nope' (known: train, validation, test-interpolation, test-extrapolation)"
    ]


def test_bundled_data_is_the_generated_dataset(data_root):
    for domain in layout.DOMAINS:
        assert layout.domain_file(data_root, domain).read_text() == domain_text(domain)
        for split in layout.SPLITS:
            bundled = {p.name: p.read_text() for p in layout.problem_files(data_root, domain, split)}
            assert bundled == dict(generators.generate_split(domain, split, seed=0)), f"{domain}/{split}"


def test_every_bundled_problem_loads_with_its_size(data_root):
    for domain in layout.DOMAINS:
        for split in layout.SPLITS:
            for path in layout.problem_files(data_root, domain, split):
                task = load_task(layout.domain_file(data_root, domain), path)
                check_size(domain, task, size_of(domain, path.name))
                assert task.name == path.stem
                assert not task.goal_reached(task.init) or path.name.startswith("visitall-w01h01")


@pytest.mark.skipif(not PAPER.is_dir(), reason="the paper's splits are not on this machine")
@pytest.mark.parametrize("domain", layout.DOMAINS)
def test_domains_ground_like_the_papers(tmp_path, domain):
    """A paper problem grounds to the same operators with our domain file as with the paper's."""
    folder = PAPER / PAPER_FOLDERS[domain]
    problem = sorted((folder / "train").glob("*.pddl"))[-1]
    (tmp_path / "domain.pddl").write_text(domain_text(domain))
    ours, theirs = load_task(tmp_path / "domain.pddl", problem), load_task(folder / "domain.pddl", problem)
    assert ours.operators == theirs.operators and len(ours.operators) > 0
    assert (ours.predicates, ours.static, ours.init, ours.goal) == (
        theirs.predicates,
        theirs.static,
        theirs.init,
        theirs.goal,
    )


@pytest.mark.skipif(not PAPER.is_dir(), reason="the paper's splits are not on this machine")
def test_visitall_reproduces_the_papers_files():
    for path in sorted((PAPER / "visitall-from-everywhere" / "validation").glob("*.pddl")):
        text = path.read_text()
        w, h, x, y = map(int, re.search(r"\(problem grid-(\d+)-(\d+)-start-(\d+)-(\d+)\)", text).groups())
        assert generators.visitall(w, h, (x, y)).rstrip() == text.rstrip(), path.name


@pytest.mark.skipif(not PAPER.is_dir(), reason="the paper's splits are not on this machine")
@pytest.mark.parametrize("split", layout.SPLITS)
def test_visitall_splits_have_the_papers_grid_shapes_and_start_counts(split):
    ours = collections.Counter(name.split("-")[1] for name, _ in generators.generate_split("visitall", split))
    theirs = collections.Counter(p.name.split("-")[0] for p in (PAPER / "visitall-from-everywhere" / split).glob("*"))
    assert ours == theirs
