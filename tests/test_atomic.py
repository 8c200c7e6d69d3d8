"""Append-only files survive a torn tail; a directory lock keeps a second writer out."""

import json
import multiprocessing
import os
import signal

import pytest

from statecentric_jax.atomic import exclusive_lock, open_for_append
from statecentric_jax.errors import InputError


def test_a_torn_last_line_is_dropped_before_appending(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"a": 1}\n{"b": ')  # killed mid-write
    with open_for_append(path) as f:
        f.write('{"c": 3}\n')
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"a": 1}, {"c": 3}]


def _append_forever(path):
    while True:
        with open_for_append(path) as f:
            f.write(json.dumps({"x": "y" * 5000}) + "\n")


def test_kill_during_append_loses_at_most_the_line_being_written(tmp_path):
    path = tmp_path / "results.jsonl"
    writer = multiprocessing.get_context("spawn").Process(target=_append_forever, args=(path,))
    writer.start()
    while not path.exists() or path.stat().st_size < 200_000:
        pass
    os.kill(writer.pid, signal.SIGKILL)
    writer.join()
    with open_for_append(path) as f:
        f.write('{"after": 1}\n')
    lines = path.read_text().splitlines()
    assert all(json.loads(line) for line in lines) and lines[-1] == '{"after": 1}'


def test_a_second_writer_gets_one_clear_error(tmp_path):
    busy = rf"an evaluation is already running here \(pid {os.getpid()}\)"
    with (
        exclusive_lock(tmp_path, "an evaluation"),
        pytest.raises(InputError, match=busy),
        exclusive_lock(tmp_path, "an evaluation"),
    ):
        pass
    with exclusive_lock(tmp_path, "an evaluation"):  # released on exit
        pass
