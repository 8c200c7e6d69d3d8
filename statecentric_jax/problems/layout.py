"""Where PDDL files live: `<root>/<domain>/domain.pddl` and `<root>/<domain>/<split>/*.pddl`.

`--pddl_root` may be the project's `data/` (whose domains sit in `data/domains/`) or
any tree laid out like the paper's splits. Domains have canonical names; the
paper's folder `visitall-from-everywhere` is the domain `visitall`.

A root in the IPC learning-track layout (`<root>/<domain>/domain.pddl`,
`<root>/<domain>/training/easy/pNN.pddl`, `<root>/<domain>/testing/<level>/pNN.pddl`)
is trained on through a *training view*: a folder laid out like the paper's splits whose
`train/`, `validation/` and `selection/` hold links to picked training problems
(`training_view`). Its test problems are never linked, so nothing that trains reads them:

  <view>/<domain>/domain.pddl           -> <root>/<domain>/domain.pddl
  <view>/<domain>/<split>/pNN.pddl      -> <root>/<domain>/training/easy/pNN.pddl
"""

from __future__ import annotations

import hashlib
import os
import pathlib
from collections.abc import Mapping

from statecentric_jax.errors import InputError
from statecentric_jax.problems.domains import DOMAINS  # noqa: F401  (re-exported: the layout's domains)

SPLITS = ("train", "validation", "test-interpolation", "test-extrapolation")
IPC_TRAINING = pathlib.Path("training") / "easy"  # an IPC domain's training problems
VIEW_SPLITS = ("train", "validation", "selection")  # a training view's splits
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


def is_ipc_layout(pddl_root: str | os.PathLike, domain: str) -> bool:
    """Whether the domain's folder is in the IPC layout (training problems in `training/easy/`); False for a
    missing root or domain (whoever reads them says so)."""
    try:
        folder = domain_dir(pddl_root, domain)
    except InputError:
        return False
    return (folder / IPC_TRAINING).is_dir() and not (folder / "train").is_dir()


def parse_picks(spec: str, count: int) -> list[int]:
    """1-based positions among `count` sorted training problems: comma-separated `N`, `A-B` or `A-B/S`
    (every S-th from A to B); positions past `count` are left out."""
    positions: list[int] = []
    for item in (part.strip() for part in spec.split(",") if part.strip()):
        span, _, step = item.partition("/")
        first, _, last = span.partition("-")
        try:
            a, b, s = int(first), int(last or first), int(step or 1)
        except ValueError:
            raise InputError(None, f"training problems '{spec}': '{item}' is not N, A-B or A-B/S") from None
        if a < 1 or b < a or s < 1:
            raise InputError(None, f"training problems '{spec}': '{item}' is not an increasing range from 1")
        positions.extend(p for p in range(a, b + 1, s) if p <= count and p not in positions)
    return positions


def training_view(
    pddl_root: str | os.PathLike, domain: str, picks: Mapping[str, str], views_dir: str | os.PathLike
) -> pathlib.Path:
    """A root laid out like the paper's splits, below `views_dir`, whose splits (`VIEW_SPLITS`) link the
    training problems that `picks` names (`parse_picks` spec per split); the same inputs, the same folder."""
    source = domain_dir(pddl_root, domain).resolve()
    training = sorted((source / IPC_TRAINING).glob("*.pddl"))
    if not training:
        raise InputError(source / IPC_TRAINING, "no training problems here")
    chosen = {s: [training[p - 1] for p in parse_picks(picks.get(s, ""), len(training))] for s in VIEW_SPLITS}
    for split in ("train", "validation"):
        if not chosen[split]:
            raise InputError(source / IPC_TRAINING, f"no '{split}' problem among {len(training)} training problems")
    key = hashlib.sha1(repr((str(source), sorted(chosen.items()))).encode()).hexdigest()[:10]
    view = pathlib.Path(views_dir).resolve() / f"{source.parent.name}-{key}"
    target = view / domain
    for split, files in chosen.items():
        (target / split).mkdir(parents=True, exist_ok=True)
        for file in files:
            _link(target / split / file.name, file)
    _link(target / "domain.pddl", source / "domain.pddl")
    return view


def _link(link: pathlib.Path, target: pathlib.Path) -> None:
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, link)
