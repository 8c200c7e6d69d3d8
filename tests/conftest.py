"""Shared fixtures: the project's bundled PDDL data."""

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def data_root() -> pathlib.Path:
    return REPO / "data"
