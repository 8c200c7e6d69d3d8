"""A corrupt or mismatched LSTM checkpoint is one `error:` line, the only output on stderr."""

import shutil
import subprocess
import sys

import pytest

from tests.launching import REPO

LOAD = """
import sys, ml_collections
from statecentric_jax.errors import InputError
from statecentric_jax.learning import lstm
directory, action, hidden = sys.argv[1], sys.argv[2], int(sys.argv[3])
settings = ml_collections.ConfigDict({"hidden": hidden, "layers": 1})
if action == "save":
    lstm.LSTMModel(lstm.init_params(5, settings, "delta", 0), 5, hidden, 1, "delta").save(directory)
else:
    try:
        lstm.load(directory, 5, "delta", settings)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
"""


def _run(*args):
    return subprocess.run([sys.executable, "-c", LOAD, *map(str, args)], capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lstm") / "checkpoint"
    assert _run(directory, "save", 8).returncode == 0
    return directory


def test_another_hidden_size_is_refused_before_restoring(checkpoint):
    proc = _run(checkpoint, "load", 16)
    assert proc.returncode == 2 and proc.stderr == (
        f"error: {checkpoint}: not a checkpoint of this model: ['lstm_0']['hf']['bias'] has shape (8,),"
        " expected (16,) (config lstm.hidden, lstm.layers or the encoder changed?)\n"
    )


def test_garbage_in_the_manifest_is_the_only_line(checkpoint, tmp_path):
    bad = tmp_path / "checkpoint"
    shutil.copytree(checkpoint, bad)
    (bad / "manifest.ocdbt").write_bytes(bytes(range(256)) * 3)
    proc = _run(bad, "load", 8)
    assert (
        proc.returncode == 2 and proc.stderr == f"error: {bad}: corrupt LSTM checkpoint (its metadata cannot be read)\n"
    )
    assert _run(checkpoint, "load", 8).returncode == 0
