"""Append-only files survive a torn tail; a directory lock keeps a second writer out; a failed write is one
line naming the file and leaves nothing partial; garbage in a file the project wrote is made again."""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from statecentric_jax.atomic import (
    check_writable,
    exclusive_lock,
    open_for_append,
    read_own_json,
    read_own_lines,
    read_own_text,
    write_text,
)
from statecentric_jax.errors import InputError
from tests.launching import REPO


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


# a write that fails is one InputError naming the file, and leaves no partial file
def test_a_failed_write_names_the_file_and_leaves_nothing(tmp_path):
    folder = tmp_path / "summary.json"
    folder.mkdir()  # a folder where the file should be
    with pytest.raises(InputError, match=f"{folder}: cannot write"):
        write_text(folder, "{}")
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def _full_disk(code: str, *args: str) -> subprocess.CompletedProcess:
    """`code` run where a file cannot grow beyond 1000 bytes (EFBIG, as on a full disk)."""
    limit = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
    )
    return subprocess.run([sys.executable, "-c", limit + code, *args], capture_output=True, text=True, cwd=REPO)


def test_a_full_disk_while_appending_names_the_file_and_the_rerun_recovers(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"a": 1}\n')
    code = "from statecentric_jax.atomic import open_for_append\nwith open_for_append(sys.argv[1]) as f:\n"
    proc = _full_disk(code + "    f.write('{\"b\": \"' + 'x' * 5000 + '\"}\\n')\n", str(path))
    assert f"InputError: {path}: cannot write (File too large); free some space" in proc.stderr, proc.stderr
    with open_for_append(path) as f:  # space freed: the torn line is cut, the next record is whole
        f.write('{"c": 3}\n')
    assert read_own_lines(path) == [{"a": 1}, {"c": 3}] and len(path.read_text().splitlines()) == 2


def test_a_full_disk_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("old")
    proc = _full_disk(
        "from statecentric_jax.atomic import write_text\nwrite_text(sys.argv[1], 'x' * 100000)\n", str(path)
    )
    assert f"InputError: {path}: cannot write (File too large)" in proc.stderr, proc.stderr
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["results.json"]
    write_text(path, "x" * 100000)  # space freed: the rerun writes it
    assert path.read_text() == "x" * 100000


def test_output_folders_are_checked_before_the_work(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(InputError, match=f"{afile}: is a file, not a folder$"):
        check_writable(afile)
    with pytest.raises(InputError, match=f"{afile}: is a file, not a folder .for {afile}/run/eval.$"):
        check_writable(afile / "run" / "eval")
    check_writable(tmp_path / "not" / "yet" / "made")
    assert not (tmp_path / "not").exists()


# files the project wrote itself: garbage, binary or not, is absent and made again
@pytest.mark.parametrize("garbage", [b"\xff\xfe\x00garbage\x80", b"not json {"])
def test_garbage_in_an_own_file_is_rewritten(tmp_path, garbage):
    path = tmp_path / "summary.json"
    path.write_bytes(garbage)
    assert read_own_json(path) is None
    write_text(path, '{"solved": 1}')
    assert read_own_json(path) == {"solved": 1}


def test_garbage_lines_of_an_own_json_lines_file_are_left_out(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"a": 1}\n\xff\xfe\x80\n{"b": \n{"c": 3}\n')
    assert read_own_lines(path) == [{"a": 1}, {"c": 3}]
    assert read_own_lines(tmp_path / "absent.jsonl") == [] and read_own_text(tmp_path) is None


def test_kill_9_during_append_leaves_whole_lines(tmp_path):
    path = tmp_path / "log.jsonl"
    writer = (
        "import sys; from statecentric_jax.atomic import open_for_append\n"
        "with open_for_append(sys.argv[1]) as f:\n"
        "    while True: f.write('{\"x\": \"' + 'y' * 100000 + '\"}\\n'); f.flush()\n"
    )
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", writer, str(path)], cwd=REPO)
        while not path.exists() or path.stat().st_size < 300000:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with open_for_append(path) as f:
            f.write('{"x": "after"}\n')
        assert all(json.loads(line) for line in path.read_text().splitlines())
    assert path.read_text().count('"after"') == 3
