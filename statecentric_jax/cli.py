"""Shared glue for the absl entry points in `launch/`.

Every bad input, whether a flag absl rejects (a misspelt `--config.*` key, a
missing `--config` file, a non-integer) or an `InputError` raised later, ends as
one line `error: <file or flag>: <reason>` on stderr and exit code 2.
"""

from __future__ import annotations

import ast
import contextlib
import sys
from collections.abc import Callable, Sequence

from absl import app, flags

from statecentric_jax.errors import InputError

MAX_LINE = 300


def _fail(message: str) -> None:
    message = " ".join(message.split())
    if len(message) > MAX_LINE:
        message = message[: MAX_LINE - 3] + "..."
    print(message, file=sys.stderr)


def _config_error(argv: Sequence[str], error: Exception) -> str:
    """One line for a `--config` flag that failed: the file, or the override key absl could not set."""
    text = error.args[0] if error.args and isinstance(error.args[0], str) else str(error)
    with contextlib.suppress(ValueError, SyntaxError):  # ml_collections wraps a KeyError's repr
        text = str(ast.literal_eval(text))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if isinstance(error, (AttributeError, KeyError)) and lines:  # a misspelt --config.<key>=value
        key = lines[0].strip("'\"")
        flag = next((a.split("=")[0] for a in argv if a.startswith("--config.") and key in a), "--config")
        return f"error: {flag}: no such config key '{key}'. {' '.join(lines[1:])}".strip()
    return f"error: --config: {lines[-1] if lines else type(error).__name__}"


def _parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with its multi-line usage dump or traceback replaced by one line."""
    try:
        rest = flags.FLAGS(argv)
        for name in flags.FLAGS:  # config files load lazily: make a missing or broken one fail now
            if "." not in name and type(flags.FLAGS[name]).__module__.startswith("ml_collections.config_flags"):
                value = flags.FLAGS[name].value
                if value is not None:
                    value.keys()
        return rest
    except flags.Error as e:
        flag, _, reason = str(e).partition(": ")
        if not flag.startswith(("flag --", "--")):
            flag, reason = "flags", str(e)
        _fail(f"error: {flag.removeprefix('flag ').split('=')[0]}: {reason}")
    except Exception as e:  # a config file that fails to load raises anything
        _fail(_config_error(argv, e))
    sys.exit(2)


def integers(flag: str, values: Sequence[str]) -> list[int]:
    """Parse a list flag of integers (e.g. `--seeds`); a bad entry is an InputError naming the flag."""
    try:
        return [int(v) for v in values]
    except ValueError:
        raise InputError(f"--{flag}", f"expected comma-separated integers, got {','.join(values)!r}") from None


def run_main(main: Callable[[Sequence[str]], int | None]) -> None:
    """`app.run(main)`, but bad input ends with one line on stderr and exit code 2."""

    def guarded(argv: Sequence[str]) -> int | None:
        try:
            return main(argv)
        except InputError as e:
            _fail(f"error: {e}")
            return e.exit_code

    app.run(guarded, flags_parser=_parse_flags)
