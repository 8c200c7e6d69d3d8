"""Shared glue for the absl entry points in `launch/`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from absl import app

from statecentric_jax.errors import InputError


def run_main(main: Callable[[Sequence[str]], int | None]) -> None:
    """`app.run(main)`, but bad input ends with one line on stderr and exit code 2."""

    def guarded(argv: Sequence[str]) -> int | None:
        try:
            return main(argv)
        except InputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    app.run(guarded)
