"""A run's config is made of sections, each owned and checked by the layer that reads it.

`embedding/config.py` owns `data`; `learning/config.py` owns `model`, `lstm`, `xgb`, `ridge`, `value` and
`ensemble`; `search/config.py` owns `decode`; `method/config.py` owns `aggregation` and `selection`.
`statecentric_jax/config.py` composes them. A config.json written by older code lacks the settings added
since: `with_defaults` gives them their defaults, which is what such a run was trained and decoded with.
"""

from __future__ import annotations

from collections.abc import Iterable

from statecentric_jax.errors import InputError

ALWAYS_STORED = ("seed", "data", "model", "lstm", "xgb", "decode")  # in every config.json: without one it is corrupt


def with_defaults(stored: dict, defaults: dict) -> dict:
    """`stored` (a config as JSON) with every setting of `defaults` it lacks, at its default."""
    out = dict(stored)
    for key, default in defaults.items():
        if key not in out:
            out[key] = default
        elif isinstance(out[key], dict) and isinstance(default, dict):
            out[key] = with_defaults(out[key], default)
    return out


def require_int(name: str, value: object, least: int) -> None:
    """One line for a setting that must be an integer (not a bool) of at least `least`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise InputError(None, f"config {name}={value!r} must be an integer >= {least}")


def require_one_of(name: str, value: object, allowed: Iterable[str]) -> None:
    """One line for a setting that must be one of `allowed`."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise InputError(None, f"config {name}={value!r} is not one of {', '.join(allowed)}")
