"""Where PDDL files live: `<root>/<domain>/domain.pddl` and `<root>/<domain>/<split>/*.pddl`.

`--pddl_root` may be the project's `data/` (whose domains sit in `data/domains/`) or
any tree laid out like the paper's splits. Domains have canonical names; the
paper's folder `visitall-from-everywhere` is the domain `visitall`.
"""

from __future__ import annotations

import os
import pathlib

from statecentric_jax.errors import InputError
from statecentric_jax.problems.domains import DOMAINS  # noqa: F401  (re-exported: the layout's domains)

SPLITS = ("train", "validation", "test-interpolation", "test-extrapolation")
_FOLDER_ALIASES = {"visitall": ("visitall", "visitall-from-everywhere")}


def canonical_domain(folder_name: str) -> str:
    for name, folders in _FOLDER_ALIASES.items():
        if folder_name in folders:
            return name
    return folder_name


def _base(pddl_root: str | os.PathLike) -> pathlib.Path:
    root = pathlib.Path(pddl_root)
    if not root.is_dir():
        raise InputError(root, "PDDL root is not a directory")
    nested = root / "domains"
    return nested if nested.is_dir() else root


def available_domains(pddl_root: str | os.PathLike) -> list[str]:
    """Canonical names of the domains under the root (folders with a domain.pddl)."""
    base = _base(pddl_root)
    return sorted(canonical_domain(p.parent.name) for p in base.glob("*/domain.pddl"))


def domain_dir(pddl_root: str | os.PathLike, domain: str) -> pathlib.Path:
    base = _base(pddl_root)
    for folder in _FOLDER_ALIASES.get(domain, (domain,)):
        if (base / folder / "domain.pddl").is_file():
            return base / folder
    raise InputError(base, f"no domain '{domain}' here (found: {', '.join(available_domains(pddl_root)) or 'none'})")


def domain_file(pddl_root: str | os.PathLike, domain: str) -> pathlib.Path:
    return domain_dir(pddl_root, domain) / "domain.pddl"


def problem_files(pddl_root: str | os.PathLike, domain: str, split: str) -> list[pathlib.Path]:
    """The split's problem files, sorted by name; an absent split raises InputError."""
    folder = domain_dir(pddl_root, domain) / split
    if not folder.is_dir():
        raise InputError(folder, f"no split '{split}' for domain '{domain}'")
    return sorted(folder.glob("*.pddl"))
