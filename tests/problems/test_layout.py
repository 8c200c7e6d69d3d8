"""The IPC layout: discovery, picking training problems, and a training view that holds no test problem."""

import pathlib

import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.method import pipeline
from statecentric_jax.problems import generators, layout

REPO = pathlib.Path(__file__).resolve().parents[2]


def ipc_root(root: pathlib.Path, training: int = 8) -> pathlib.Path:
    """A small IPC-layout folder: blocks/domain.pddl, training/easy/p01.. (growing), testing/easy/p01."""
    base = root / "blocks"
    (base / "training" / "easy").mkdir(parents=True)
    (base / "testing" / "easy").mkdir(parents=True)
    (base / "domain.pddl").write_text((REPO / "data/domains/blocks/domain.pddl").read_text())
    for i in range(1, training + 1):
        n = 2 + i // 2
        (base / "training" / "easy" / f"p{i:02d}.pddl").write_text(generators.blocks(n, seed=i, name=f"p{i:02d}"))
    (base / "testing" / "easy" / "p01.pddl").write_text(generators.blocks(9, seed=99, name="test-p01"))
    return root


def test_picks_are_positions_ranges_and_strides():
    assert layout.parse_picks("1-9/2", 20) == [1, 3, 5, 7, 9]
    assert layout.parse_picks("2-4, 10, 3", 8) == [2, 3, 4]  # past the count left out, no repeats
    for bad in ("a", "3-1", "0", "1-4/0"):
        with pytest.raises(InputError, match="training problems"):
            layout.parse_picks(bad, 8)


def test_ipc_layout_is_discovered_and_its_view_links_only_training_problems(tmp_path):
    root = ipc_root(tmp_path / "ipc")
    assert layout.available_domains(root) == ["blocks"]
    assert layout.is_ipc_layout(root, "blocks") and not layout.is_ipc_layout(REPO / "data", "blocks")
    assert not layout.is_ipc_layout(tmp_path / "missing", "blocks")
    picks = {"train": "1-5/2", "validation": "2-6/2", "selection": "7,8"}
    view = layout.training_view(root, "blocks", picks, tmp_path / "views")
    assert layout.training_view(root, "blocks", picks, tmp_path / "views") == view  # the same folder again
    assert [p.name for p in layout.problem_files(view, "blocks", "train")] == ["p01.pddl", "p03.pddl", "p05.pddl"]
    assert [p.name for p in layout.problem_files(view, "blocks", "selection")] == ["p07.pddl", "p08.pddl"]
    linked = {p.resolve() for p in (view / "blocks").rglob("*.pddl")}
    assert all("testing" not in p.parts for p in linked)
    assert layout.domain_file(view, "blocks").read_text() == (root / "blocks/domain.pddl").read_text()
    with pytest.raises(InputError, match="no 'train' problem"):
        layout.training_view(root, "blocks", {"train": "20", "validation": "1"}, tmp_path / "views")


def test_resolved_config_reads_an_ipc_root_through_its_view(tmp_path):
    root = ipc_root(tmp_path / "ipc")
    config = config_lib.base()
    config.data.pddl_root, config.data.cache_dir = str(root), str(tmp_path / "cache")
    resolved = pipeline.resolved(config)
    assert pathlib.Path(resolved.data.pddl_root).is_relative_to(tmp_path / "cache" / "views")
    assert pipeline.resolved(resolved).data.pddl_root == resolved.data.pddl_root  # a view stays itself
    paper = config_lib.base()
    paper.data.pddl_root = str(REPO / "data")
    assert pipeline.resolved(paper).data.pddl_root == str(REPO / "data")
