"""Shared fixtures: the project's bundled PDDL data, and a tiny Blocksworld root with a run trained on it."""

import pathlib
import shutil

import ml_collections
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.problems import generators

REPO = pathlib.Path(__file__).resolve().parents[1]
TINY_SPLITS = {"train": [3, 4, 4, 5], "validation": [4], "test-interpolation": [4], "test-extrapolation": [5, 6, 6, 7]}
EASY = (  # two blocks, one step: any trained run solves it
    "(define (problem easy) (:domain blocks) (:objects a b)"
    " (:init (clear a) (clear b) (ontable a) (ontable b) (handempty)) (:goal (and (on a b))))"
)


@pytest.fixture(scope="session")
def data_root() -> pathlib.Path:
    return REPO / "data"


@pytest.fixture(scope="session")
def blocks_root(tmp_path_factory) -> pathlib.Path:
    """A PDDL root of generated Blocksworld problems, blocks/<split>/b<n>-<i>.pddl (TINY_SPLITS), and
    easy.pddl beside blocks/."""
    root = tmp_path_factory.mktemp("pddl")
    base = root / "blocks"
    for split, sizes in TINY_SPLITS.items():
        (base / split).mkdir(parents=True)
        for i, n in enumerate(sizes):
            (base / split / f"b{n}-{i}.pddl").write_text(generators.blocks(n, seed=i, name=f"b{n}-{i}"))
    (base / "domain.pddl").write_text((REPO / "data/domains/blocks/domain.pddl").read_text())
    (root / "easy.pddl").write_text(EASY)
    return root


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory) -> pathlib.Path:
    """One data cache for every tiny run: plans and embeddings are made once."""
    return tmp_path_factory.mktemp("cache")


def tiny_config_for(root: pathlib.Path, cache: pathlib.Path) -> ml_collections.ConfigDict:
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    config.data.pddl_root = str(root)
    config.data.cache_dir = str(cache)
    config.xgb.rounds = 4
    return config


@pytest.fixture
def tiny_config(blocks_root, tiny_cache) -> ml_collections.ConfigDict:
    """WL-XGB delta on `blocks_root` with 4 boosting rounds: seconds to train; a fresh copy for each test."""
    return tiny_config_for(blocks_root, tiny_cache)


@pytest.fixture(scope="session")
def tiny_run(blocks_root, tiny_cache, tmp_path_factory) -> pathlib.Path:
    """`tiny_config` trained with seed 13 and evaluated on the validation split: the seed's workdir.
    Shared by every test: copy it before changing it."""
    from statecentric_jax.method import pipeline

    workdir = tmp_path_factory.mktemp("tiny_run")
    pipeline.run_experiment(tiny_config_for(blocks_root, tiny_cache), workdir, seeds=[13], splits=["validation"])
    return workdir / "seed13"


@pytest.fixture
def tiny_run_copy(tiny_run, tmp_path) -> pathlib.Path:
    """A copy of `tiny_run` without its evaluations, for a test to change."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy, ignore=shutil.ignore_patterns("eval"))
    return copy
