"""An error is one short line whatever the file name: control characters escaped, long paths shortened."""

import errno

from statecentric_jax.errors import InputError, from_os_error


def test_a_newline_in_a_file_name_is_escaped():
    error = InputError("/tmp/bad\nname.pddl", "syntax error")
    assert str(error) == "/tmp/bad\\nname.pddl: syntax error" and "\n" not in str(error)
    assert error.path == "/tmp/bad\nname.pddl"  # the path itself is kept


def test_a_long_path_is_shortened_in_the_middle():
    path = "/tmp/" + "d" * 200 + "/" + "e" * 210 + "/p01.pddl"
    line = f"error: {InputError(path, 'syntax error at line 3: ' + 'x' * 200)}"
    assert len(line) < 300 and line.startswith("error: /tmp/ddd") and "...eee" in line
    assert line.split(": ")[1].endswith("/p01.pddl")


def test_an_os_error_names_the_path_and_what_to_do():
    full = from_os_error(OSError(errno.ENOSPC, "No space left on device"), "/r/eval/summary.json", "write")
    assert (
        str(full) == "/r/eval/summary.json: cannot write (No space left on device); free some space and run"
        " again: finished work is kept"
    )
    named = from_os_error(NotADirectoryError(errno.ENOTDIR, "Not a directory", "/t/afile/plan.txt"))
    assert str(named) == "/t/afile/plan.txt: Not a directory"
