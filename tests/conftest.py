"""Shared fixtures: the project's bundled PDDL data, and one tiny trained run to probe.

`tiny_run` is an XGBoost run (4 rounds, a ridge cost-to-go) on a few small Blocks problems,
trained once per test session; tests that change it work on a copy (`tiny_run_copy`).
"""

import pathlib
import shutil

import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.method import pipeline
from statecentric_jax.problems import generators

REPO = pathlib.Path(__file__).resolve().parents[1]
TINY_SIZES = {"train": [3, 4, 4, 5], "validation": [4], "test-extrapolation": [5, 6, 6, 7]}


@pytest.fixture(scope="session")
def data_root() -> pathlib.Path:
    return REPO / "data"


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory) -> pathlib.Path:
    """A PDDL root with a few small Blocks problems per split."""
    root = tmp_path_factory.mktemp("pddl")
    base = root / "blocks"
    for split, sizes in TINY_SIZES.items():
        (base / split).mkdir(parents=True)
        for i, n in enumerate(sizes):
            (base / split / f"b{n}-{i}.pddl").write_text(generators.blocks(n, seed=i, name=f"b{n}-{i}"))
    (base / "domain.pddl").write_text((REPO / "data/domains/blocks/domain.pddl").read_text())
    return root


def tiny_config(tiny_root: pathlib.Path, cache_dir: pathlib.Path):
    """The tiny run's configuration."""
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    config.data.pddl_root = str(tiny_root)
    config.data.cache_dir = str(cache_dir)
    config.xgb.rounds = 4
    config.xgb.n_jobs = 1
    config.value.kind = "ridge"
    return config


@pytest.fixture(scope="session")
def tiny_run(tiny_root, tmp_path_factory) -> pathlib.Path:
    """A trained seed directory (seed 13 of an experiment) with its validation split evaluated."""
    workdir = tmp_path_factory.mktemp("tiny_run")
    config = tiny_config(tiny_root, tmp_path_factory.mktemp("cache"))
    pipeline.run_experiment(config, workdir, seeds=[13], splits=["validation"])
    return workdir / "seed13"


@pytest.fixture
def tiny_run_copy(tiny_run, tmp_path) -> pathlib.Path:
    """A copy of the tiny run without its evaluations, for a test to change."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy, ignore=shutil.ignore_patterns("eval"))
    return copy
