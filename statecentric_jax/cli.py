"""Shared glue for the absl entry points in `launch/`: bad input is one line and exit code 2."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import ml_collections
from absl import app, flags

from statecentric_jax.errors import InputError, from_os_error

N = TypeVar("N", int, float)


def _one_line(error: BaseException) -> str:
    while len(error.args) == 1 and isinstance(error.args[0], BaseException):  # ConfigDict wraps its KeyError
        error = error.args[0]
    text = error.args[0] if len(error.args) == 1 and isinstance(error.args[0], str) else str(error)
    if isinstance(error, KeyError):  # ml_collections: "'key'\nDid you mean ..."
        key, *hint = text.splitlines()
        text = ". ".join([f"no such config key '{key.strip(chr(39))}'", *hint])
    return " ".join(text.split()).strip("'\"")


def _fail(message: str) -> None:
    print(f"error: {message}"[:300], file=sys.stderr)
    sys.exit(2)


def load_config_file(path: str | os.PathLike) -> ml_collections.ConfigDict:
    """`get_config()` of a config file; any failure to load it (a syntax error, a file that is not Python,
    one that raises) is bad input: one InputError naming the file."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise InputError(path, "no such config file")
    spec = importlib.util.spec_from_file_location(f"_config_{path.stem}", path)
    try:
        assert spec is not None and spec.loader is not None, "a .py path always has a spec"
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.get_config()
    except (Exception, SystemExit) as e:  # a config file is user input: any failure is bad input
        raise InputError(path, f"cannot load config ({type(e).__name__}: {e})") from None


def _load_config_flags(argv: Sequence[str]) -> None:
    """Load the config files named on the command line once before absl does, which lets a failure escape
    as a traceback: here it is one InputError."""
    names = [name for name in flags.FLAGS if type(flags.FLAGS[name].parser).__name__ == "ConfigFileFlagParser"]
    for name in names:
        for i, arg in enumerate(argv[1:], 1):
            value = arg.split("=", 1)[1] if arg.startswith(f"--{name}=") else None
            if arg == f"--{name}" and i + 1 < len(argv):
                value = argv[i + 1]
            if value is not None and os.path.isfile(value):  # absl names a missing one, or "file.py:argument"
                load_config_file(value)


def _parse_flags(argv: Sequence[str]) -> list[str]:
    """absl's flag parsing, but every bad flag or config override is one `error:` line and exit code 2."""
    try:
        _load_config_flags(argv)
        rest = flags.FLAGS(argv)
        for name in flags.FLAGS:  # a config file that failed to load raises only when used: use it here
            value = flags.FLAGS[name].value
            if (
                value is not None and type(value).__name__ == "_ErrorConfig"
            ):  # ml_collections' stand-in for a failed config file
                value.to_dict()
        return rest
    except flags.Error as e:
        reason = _one_line(e)
        flag = re.match(r"flag (--[\w.]+)=.*?: (.*)", reason)  # absl: "flag --jobs=-1: -1 is not ..."
        _fail(f"{flag[1]}: {flag[2]}" if flag else f"command line: {reason}")
    except InputError as e:
        _fail(str(e))
    except (AttributeError, KeyError, TypeError, ValueError, OSError) as e:  # config files and overrides
        reason = _one_line(e)
        named = [a.split("=", 1)[0] for a in argv[1:] if a.startswith("--config")]
        named = [a for a in named if a.rsplit(".", 1)[-1] in reason] or named[:1] or ["command line"]
        _fail(f"{named[-1]}: {reason}")
    raise AssertionError("unreachable")


def run_main(main: Callable[[Sequence[str]], int | None]) -> None:
    """`app.run(main)`, but bad input, and a read or write the OS refuses (a full disk, a read-only
    location, a file where a folder should be), end with one line on stderr and exit code 2; Ctrl-C (or
    SIGTERM where a job turns it into one) is one line and exit code 130, since finished work is kept."""

    def guarded(argv: Sequence[str]) -> int | None:
        try:
            return main(argv)
        except InputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        except OSError as e:
            print(f"error: {from_os_error(e)}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("interrupted: finished work is kept; run the same command again to go on", file=sys.stderr)
            return 130

    app.run(guarded, flags_parser=_parse_flags)


def parse_ints(flag: str, values: Sequence[str]) -> list[int]:
    """A list flag of integers (e.g. --seeds=13,14), or one InputError naming the flag."""
    return _parse_numbers(flag, values, int, "integers")


def parse_floats(flag: str, values: Sequence[str]) -> list[float]:
    """A list flag of numbers (e.g. --value_weights=0.5,2), or one InputError naming the flag."""
    return _parse_numbers(flag, values, float, "numbers")


def _parse_numbers(flag: str, values: Sequence[str], number: Callable[[str], N], what: str) -> list[N]:
    try:
        numbers = [number(v) for v in values]
    except ValueError:
        raise InputError(f"--{flag}", f"expected {what} separated by commas, got {','.join(values)}") from None
    if not numbers:
        raise InputError(f"--{flag}", f"expected {what} separated by commas, got nothing")
    return numbers


def check_backend(backend: str) -> None:
    """Refuse before any work a backend whose optional package is not installed."""
    if backend == "ray" and importlib.util.find_spec("ray") is None:
        raise InputError("--backend=ray", "Ray is not installed; install the ray extra: pip install -e '.[ray]'")


def define_decode_flags() -> Callable[[], dict[str, Any]]:
    """Define the flags that override a trained run's decoding settings; returns what reads them, as keyword
    arguments of `evaluation.evaluate` and `evaluation.plan_problem` (None where a flag is unset: the run's)."""
    # imported here, so that entry points that do not decode need no jax
    from statecentric_jax.search.base import EXPLORATIONS, STRATEGIES

    defined = [
        flags.DEFINE_integer("beam_width", None, "Beam width (default: the run's config, 3).", lower_bound=1),
        flags.DEFINE_enum(
            "strategy", None, list(STRATEGIES), "Search strategy (default: the run's config, the paper's beam)."
        ),
        flags.DEFINE_integer(
            "budget", None, "Node expansions per problem for strategies other than beam.", lower_bound=1
        ),
        flags.DEFINE_enum(
            "exploration",
            None,
            list(EXPLORATIONS),
            "Best-first with a cost-to-go: a second queue (default: the run's config).",
        ),
        flags.DEFINE_bool(
            "clip_cost_to_go",
            None,
            "Best-first with a cost-to-go: an estimate below zero reads as zero (default: the run's, true).",
        ),
        flags.DEFINE_integer(
            "goal_agenda",
            None,
            "Decode in stages with this many more goals each; 0: the whole goal (default: the run's).",
            lower_bound=0,
        ),
        flags.DEFINE_bool(
            "action_elimination",
            None,
            "Drop the steps a solved plan does not need, a symbolic post-processing (default: the run's).",
        ),
        flags.DEFINE_bool(
            "prune_dead_ends",
            None,
            "Best-first: close the nodes from which the goal is unreachable even with deletes ignored (default: the"
            " run's).",
        ),
        flags.DEFINE_bool(
            "estimate_helpful_only",
            None,
            "Best-first with the relaxed_plan queue: estimate only the children of helpful actions; the others wait"
            " in that queue alone (default: the run's).",
        ),
        flags.DEFINE_bool(
            "prune_symmetric",
            None,
            "Keep one of the successors that differ only by interchangeable objects (default: the run's).",
        ),
        flags.DEFINE_integer(
            "preferred_boost",
            None,
            "Best-first with the relaxed_plan queue: a queue of helpful actions' children that takes this many turns"
            " after each shorter relaxed plan; 0: none (default: the run's).",
            lower_bound=0,
        ),
        flags.DEFINE_float(
            "time_limit", None, "Seconds per problem; past it the outcome is timeout; 0: none.", lower_bound=0
        ),
        flags.DEFINE_integer(
            "memory_limit_mb", None, "Resident MiB; past it the outcome is memory; 0: none.", lower_bound=0
        ),
    ]
    return lambda: {holder.name: holder.value for holder in defined}
