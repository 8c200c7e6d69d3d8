"""Embedded datasets: the solved trajectories of a domain's splits, as arrays.

Layout of a dataset directory (one domain, one encoding):

  encoder.json     the encoder every split was embedded with
  encoder.key      hash of the encoder's inputs (cache key)
  <split>.npz      states [sum_i (T_i + 1), D] (all trajectories, concatenated),
                   lengths [P] (T_i + 1), goals [P, D], problems [P],
                   num_objects [P], meta (JSON: domain, encoding, split, cache
                   key, unseen_fraction)

The WL vocabulary comes from the training split only. FSF slots are sized
over every split of the domain under the PDDL root (not only the splits being
embedded), as in the paper, where FSF's D is set by the extrapolation split.
Everything is cached: the encoder is refitted only when its inputs change (the
domain file, the training trajectories and problems for WL; all problem files
for FSF; the settings), and a split is re-embedded only when the encoder or the
split's trajectories or problem files change.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import pathlib
import zipfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from absl import logging

from statecentric_jax.atomic import read_own_text, replace_atomically
from statecentric_jax.embedding.encoders import KINDS, Encoder, WLSettings, fit_encoder, load_encoder
from statecentric_jax.errors import InputError
from statecentric_jax.planning.plans import PlanError, simulate
from statecentric_jax.planning.tasks import Task, load_task
from statecentric_jax.problems import layout
from statecentric_jax.problems.plan_generation import read_trajectories

ENCODER_FILE = "encoder.json"
TRAJECTORIES_FILE = "trajectories.jsonl"
_FORMAT = 3  # bump when the stored arrays or their meaning (or an encoding) change

Loaded = list[tuple[Task, list[frozenset[str]]]]


@dataclasses.dataclass
class EmbeddedSplit:
    """One split of one domain under one encoding; trajectories[i] is float32 [T_i + 1, D]."""

    domain: str
    encoding: str
    split: str
    problems: list[str]
    trajectories: list[np.ndarray]
    goals: np.ndarray  # float32 [P, D]
    num_objects: list[int]
    unseen_fraction: float = 0.0  # WL colour occurrences outside the vocabulary (0 for FSF)


def _split_path(out_dir: pathlib.Path, split: str) -> pathlib.Path:
    return out_dir / f"{split}.npz"


def trajectories_path(plans_dir: str | os.PathLike, domain: str, split: str) -> pathlib.Path:
    return pathlib.Path(plans_dir) / domain / split / TRAJECTORIES_FILE


def available_splits(plans_dir: str | os.PathLike, domain: str) -> list[str]:
    """The splits (in `layout.SPLITS` order) that have trajectories for `domain`."""
    return [s for s in layout.SPLITS if trajectories_path(plans_dir, domain, s).is_file()]


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _problems_digest(pddl_root: str | os.PathLike, domain: str, split: str) -> str:
    files = layout.problem_files(pddl_root, domain, split)
    for f in files:
        if not f.is_file():
            raise InputError(f, "not a readable file (a dangling symlink?)")
    return _digest(*[part for f in files for part in (f.name, f.read_bytes())])


def _read(path: pathlib.Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "no trajectories here: run launch/generate_plans.py first") from None
    except OSError as e:
        raise InputError(path, f"cannot read trajectories ({e.strerror or e})") from None


def load_split_tasks(pddl_root: str | os.PathLike, plans_dir: str | os.PathLike, domain: str, split: str) -> Loaded:
    """Tasks (loaded from the PDDL root) and their trajectories' states."""
    path = trajectories_path(plans_dir, domain, split)
    domain_file = layout.domain_file(pddl_root, domain)
    split_dir = layout.domain_dir(pddl_root, domain) / split
    loaded = []
    for record in read_trajectories(path):
        problem_file = split_dir / f"{record['problem']}.pddl"
        if not problem_file.is_file():
            raise InputError(path, f"problem '{record['problem']}' is not in {split_dir}")
        task = load_task(domain_file, problem_file)
        if sorted(task.static) != sorted(record["static"]):
            raise InputError(
                path, f"problem '{record['problem']}' differs from {problem_file} (static atoms): regenerate the plans"
            )
        objects = set(task.objects)
        for state in record["states"]:
            unknown = {name for atom in state for name in atom.strip("()").split()[1:]} - objects
            if unknown:
                raise InputError(
                    path, f"problem '{record['problem']}': a state names unknown object(s) {', '.join(sorted(unknown))}"
                )
        states = [frozenset(state) for state in record["states"]]
        _check_follows(path, record, task, states)
        loaded.append((task, states))
    return loaded


def _check_follows(path: pathlib.Path, record: dict, task: Task, states: list[frozenset[str]]) -> None:
    """A trajectory must start at the problem's initial state and each step be its action's transition: the
    stored plan is replayed and must give the stored states (an edited or reordered file trains nothing)."""
    name, plan = record["problem"], record["plan"]
    try:
        replayed = simulate(task, plan, require_goal=False)  # a trajectory need not end at the goal
    except PlanError as e:
        raise InputError(
            path, f"problem '{name}': its plan does not replay ({e.reason}): regenerate the plans"
        ) from None
    for t, (state, expected) in enumerate(zip(states, replayed)):
        if state != expected:
            what = "the problem's initial state" if t == 0 else f"the result of step {t}, {plan[t - 1]}"
            raise InputError(path, f"problem '{name}': state {t} is not {what}: regenerate the plans")


def _root_splits(pddl_root: str | os.PathLike, domain: str) -> list[str]:
    folder = layout.domain_dir(pddl_root, domain)
    return [s for s in layout.SPLITS if (folder / s).is_dir()]


def _encoder_key(
    pddl_root: str | os.PathLike, plans_dir: str | os.PathLike, domain: str, encoding: str, wl_settings: WLSettings
) -> str:
    domain_bytes = layout.domain_file(pddl_root, domain).read_bytes()
    if encoding == "wl":
        inputs: list[bytes | str] = [
            _read(trajectories_path(plans_dir, domain, "train")),
            _problems_digest(pddl_root, domain, "train"),
        ]
        settings = json.dumps(dataclasses.asdict(wl_settings), sort_keys=True)
    else:
        inputs = [_problems_digest(pddl_root, domain, s) for s in _root_splits(pddl_root, domain)]
        settings = ""
    return _digest(str(_FORMAT), domain, encoding, settings, domain_bytes, *inputs)


def _fit(
    pddl_root: str | os.PathLike, domain: str, encoding: str, wl_settings: WLSettings, tasks_of: Callable[[str], Loaded]
) -> Encoder:
    if encoding == "wl":
        return fit_encoder("wl", domain, tasks_of("train"), wl_settings)
    domain_file = layout.domain_file(pddl_root, domain)
    tasks = [
        load_task(domain_file, f)
        for s in _root_splits(pddl_root, domain)
        for f in layout.problem_files(pddl_root, domain, s)
    ]
    return fit_encoder(encoding, domain, [(task, []) for task in tasks])


def _stored_key(out_dir: pathlib.Path, split: str) -> str | None:
    try:
        with np.load(_split_path(out_dir, split)) as data:
            return json.loads(str(data["meta"]))["key"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None


def embed_loaded(encoder: Encoder, loaded: Loaded, domain: str, encoding: str, split: str) -> EmbeddedSplit:
    """Tasks and their trajectories' states (`load_split_tasks`) embedded, in memory."""
    pairs = [(task, state) for task, states in loaded for state in states]
    states, unseen = encoder.embed_with_unseen(pairs)
    bounds = np.cumsum([len(s) for _, s in loaded])[:-1]
    return EmbeddedSplit(
        domain=domain,
        encoding=encoding,
        split=split,
        problems=[pathlib.Path(t.problem_file).stem for t, _ in loaded],
        trajectories=np.split(np.asarray(states), bounds) if loaded else [],
        goals=np.asarray(encoder.embed_goals([task for task, _ in loaded])),
        num_objects=[len(t.objects) for t, _ in loaded],
        unseen_fraction=unseen,
    )


def _embed_split(
    encoder: Encoder, loaded: Loaded, domain: str, encoding: str, split: str, key: str, out_dir: pathlib.Path
) -> None:
    embedded = embed_loaded(encoder, loaded, domain, encoding, split)
    meta = {
        "format": _FORMAT,
        "domain": domain,
        "encoding": encoding,
        "split": split,
        "key": key,
        "unseen_fraction": embedded.unseen_fraction,
    }
    lengths = [len(t) for t in embedded.trajectories]
    arrays: dict[str, Any] = {
        "states": np.concatenate(embedded.trajectories) if lengths else np.zeros((0, encoder.dim), np.float32),
        "lengths": np.asarray(lengths, np.int64),
        "goals": embedded.goals,
        "problems": np.asarray(embedded.problems, dtype=str),
        "num_objects": np.asarray(embedded.num_objects, np.int64),
        "meta": np.asarray(json.dumps(meta)),
    }

    def write(tmp: pathlib.Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    replace_atomically(_split_path(out_dir, split), write)
    unseen_note = f", unseen WL colours {100 * embedded.unseen_fraction:.2f}%" if encoding == "wl" else ""
    logging.info(
        "%s/%s/%s: %d problems, %d states, D=%d%s",
        domain,
        encoding,
        split,
        len(loaded),
        sum(lengths),
        encoder.dim,
        unseen_note,
    )


def _stored_encoder_key(out_dir: pathlib.Path) -> str | None:
    key = read_own_text(out_dir / "encoder.key")
    return None if key is None else key.strip()


def _write_encoder_key(out_dir: pathlib.Path, key: str) -> None:
    replace_atomically(out_dir / "encoder.key", lambda tmp: tmp.write_text(key + "\n"))


def build_dataset(
    pddl_root: str | os.PathLike,
    plans_dir: str | os.PathLike,
    domain: str,
    encoding: str,
    out_dir: str | os.PathLike,
    splits: Sequence[str],
    wl_settings: WLSettings | None = None,
) -> dict[str, EmbeddedSplit]:
    """Embed `splits` of `domain` into `out_dir` (cached) and return them.

    `plans_dir` holds `<domain>/<split>/trajectories.jsonl` (launch/generate_plans.py);
    WL always needs the training split's trajectories, for its vocabulary.
    """
    if encoding not in KINDS:
        raise InputError(None, f"unknown encoding '{encoding}' (choose from {', '.join(KINDS)})")
    wl_settings = wl_settings or WLSettings()
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    encoder_key = _encoder_key(pddl_root, plans_dir, domain, encoding, wl_settings)
    encoder_file = out_dir / ENCODER_FILE
    encoder_current = _stored_encoder_key(out_dir) == encoder_key and encoder_file.is_file()
    encoder = None
    tasks_of = functools.cache(lambda split: load_split_tasks(pddl_root, plans_dir, domain, split))
    for split in splits:
        key = _digest(
            encoder_key, _read(trajectories_path(plans_dir, domain, split)), _problems_digest(pddl_root, domain, split)
        )
        if encoder_current and _stored_key(out_dir, split) == key:
            logging.info("%s/%s/%s: cached in %s", domain, encoding, split, out_dir)
            continue
        if encoder is None and encoder_current:
            encoder = load_encoder(encoder_file, domain=domain, kind=encoding)
        elif encoder is None:
            encoder = _fit(pddl_root, domain, encoding, wl_settings, tasks_of)
            encoder.save(encoder_file)
            _write_encoder_key(out_dir, encoder_key)
            encoder_current = True
        _embed_split(encoder, tasks_of(split), domain, encoding, split, key, out_dir)
    return {split: load_split(out_dir, split) for split in splits}


def load_split(out_dir: str | os.PathLike, split: str) -> EmbeddedSplit:
    """One embedded split written by `build_dataset`."""
    path = _split_path(pathlib.Path(out_dir), split)
    try:
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            states, lengths, goals = data["states"], data["lengths"], data["goals"]
            problems, num_objects = data["problems"].tolist(), data["num_objects"].tolist()
    except FileNotFoundError:
        raise InputError(path, f"no embedded '{split}' split here: run launch/build_dataset.py first") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as e:
        raise InputError(path, f"corrupt dataset file ({e})") from None
    if meta.get("format") != _FORMAT or int(lengths.sum()) != len(states) or len(goals) != len(lengths):
        raise InputError(path, "corrupt or outdated dataset file: rebuild it")
    bounds = np.cumsum(lengths)[:-1]
    return EmbeddedSplit(
        domain=meta["domain"],
        encoding=meta["encoding"],
        split=meta["split"],
        problems=problems,
        trajectories=np.split(states, bounds) if len(lengths) else [],
        goals=goals,
        num_objects=num_objects,
        unseen_fraction=float(meta["unseen_fraction"]),
    )


def load_dataset_encoder(out_dir: str | os.PathLike) -> Encoder:
    """The encoder a dataset directory was embedded with."""
    return load_encoder(pathlib.Path(out_dir) / ENCODER_FILE)


def build_datasets(
    pddl_root: str | os.PathLike,
    plans_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    domains: Sequence[str] | None = None,
    encodings: Sequence[str] = KINDS,
    splits: Sequence[str] | None = None,
) -> list[str]:
    """`build_dataset` into `out_dir/<domain>/<encoding>` for each pair; a Markdown table of D and unseen colours.

    Defaults: every domain under `pddl_root`, every split with trajectories.
    """
    lines = ["| domain | encoding | D | problems per split | unseen WL colours per split |", "|---|---|---|---|---|"]
    for domain in domains or layout.available_domains(pddl_root):
        domain_splits = list(splits or available_splits(plans_dir, domain))
        if not domain_splits:
            raise InputError(
                pathlib.Path(plans_dir) / domain, "no trajectories here: run launch/generate_plans.py first"
            )
        for encoding in encodings:
            built = build_dataset(
                pddl_root, plans_dir, domain, encoding, pathlib.Path(out_dir) / domain / encoding, domain_splits
            )
            dim = load_dataset_encoder(pathlib.Path(out_dir) / domain / encoding).dim
            problems = ", ".join(f"{s} {len(b.problems)}" for s, b in built.items())
            unseen = (
                ", ".join(f"{s} {100 * b.unseen_fraction:.2f}%" for s, b in built.items()) if encoding == "wl" else "-"
            )
            lines.append(f"| {domain} | {encoding} | {dim} | {problems} | {unseen} |")
    return lines
