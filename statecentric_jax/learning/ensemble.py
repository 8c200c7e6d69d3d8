"""Several trained transition models behind one `predict_next`: their next-state predictions, averaged.

Members may differ in kind (XGBoost, LSTM), mode and seed; every member already returns its prediction in
state space (`transitions.to_state_space`), so the average is meaningful whenever the members share the encoder.
The ensemble's carry is the tuple of its members' carries, so strategies that store carries per node
(`search/expander.py`) gather and stack it like any other pytree.

An ensemble is a reference to trained runs, not a copy of them. On disk: `<directory>/ensemble.json` =
`{"format": 1, "members": ["<workdir>", ...]}`, written atomically; a member inside `<directory>` is named
relative to it (so the folder can move), any other by its absolute path. `load` reads each member with
`train.load_model` and refuses members of another domain, encoding or embedding width; the first member's
encoder, config (decoding settings) and cost-to-go serve the whole ensemble.

`config.ensemble.members` makes the pipeline (`method/pipeline.py`) train such an ensemble for every
seed: the configured model in `seed<N>/` itself, each member in `seed<N>/members/<kind>_<mode>/`, and
`seed<N>/ensemble.json` = `{"members": [".", "members/<kind>_<mode>", ...]}`. `load_run` is how evaluation
and planning open a run: the ensemble where its folder holds `ensemble.json`, its one model otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from statecentric_jax.atomic import write_text
from statecentric_jax.errors import InputError
from statecentric_jax.learning import train
from statecentric_jax.learning.transitions import TransitionModel

ENSEMBLE_FILE = "ensemble.json"
_FORMAT = 1


@dataclasses.dataclass
class EnsembleModel:
    """The mean of the members' next-state predictions (a `TransitionModel`)."""

    members: Sequence[TransitionModel]
    workdirs: Sequence[str] = ()  # where the members were trained, for `save`
    dim: int = dataclasses.field(init=False)
    mode: str = dataclasses.field(init=False)  # picks no metric: decoding settings are the first run's

    kind = "ensemble"

    def __post_init__(self) -> None:
        if not self.members:
            raise InputError(None, "an ensemble needs at least one member model")
        dims = {m.dim for m in self.members}
        if len(dims) != 1:
            raise InputError(None, f"ensemble members disagree on the embedding width: {sorted(dims)}")
        self.dim = dims.pop()
        modes = {m.mode for m in self.members}
        self.mode = modes.pop() if len(modes) == 1 else "state"  # the members' common mode, or "state"

    def init_carry(self, batch_size: int) -> tuple[Any, ...]:
        return tuple(m.init_carry(batch_size) for m in self.members)

    def predict_next(self, states: np.ndarray, goals: np.ndarray, carry: Any) -> tuple[np.ndarray, tuple[Any, ...]]:
        outputs, carries = [], []
        for member, member_carry in zip(self.members, carry):
            predicted, new_carry = member.predict_next(states, goals, member_carry)
            outputs.append(np.asarray(predicted, np.float32))
            carries.append(new_carry)
        return np.mean(outputs, axis=0), tuple(carries)

    def size(self) -> dict[str, int]:
        """The members' sizes, summed per field, plus the member count."""
        total: dict[str, int] = {"members": len(self.members)}
        for member in self.members:
            for key, count in member.size().items():
                total[key] = total.get(key, 0) + count
        return total

    def save(self, directory: str | os.PathLike) -> None:
        if not self.workdirs:
            raise InputError(None, "an ensemble built from models in memory has no workdirs to save")
        write(directory, self.workdirs)


def write(directory: str | os.PathLike, workdirs: Sequence[str | os.PathLike]) -> None:
    """`<directory>/ensemble.json` naming the trained runs `workdirs` (the first one's settings decode)."""
    directory = pathlib.Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    members = []
    for workdir in map(pathlib.Path, workdirs):
        workdir = workdir.resolve()
        members.append(str(workdir.relative_to(directory)) if workdir.is_relative_to(directory) else str(workdir))
    write_text(directory / ENSEMBLE_FILE, json.dumps({"format": _FORMAT, "members": members}, indent=1) + "\n")


def from_workdirs(workdirs: Sequence[str | os.PathLike]) -> tuple[EnsembleModel, train.LoadedModel]:
    """The ensemble of trained runs, and the first run (its encoder and config serve the whole ensemble)."""
    if not workdirs:
        raise InputError(None, "an ensemble needs at least one member workdir")
    loaded = [train.load_model(workdirs[0])]
    first = loaded[0].config.data
    loaded += [train.load_model(w, domain=first.domain, encoding=first.encoding) for w in workdirs[1:]]
    model = EnsembleModel([run.model for run in loaded], [str(w) for w in workdirs])
    return model, loaded[0]


def load(directory: str | os.PathLike) -> tuple[EnsembleModel, train.LoadedModel]:
    path = pathlib.Path(directory) / ENSEMBLE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        members = data["members"]
        if data["format"] != _FORMAT:
            raise InputError(path, f"ensemble format {data['format']}, expected {_FORMAT}")
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise InputError(path, "ensemble members must be a list of workdir paths")
    except FileNotFoundError:
        raise InputError(path, "no ensemble here") from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise InputError(path, f"corrupt ensemble file ({type(e).__name__})") from None
    return from_workdirs([pathlib.Path(directory) / m for m in members])  # an absolute member stays as it is


def load_run(workdir: str | os.PathLike) -> train.LoadedModel:
    """What evaluation and `launch/plan.py` decode with: the run's ensemble where `workdir` holds
    `ensemble.json` (its members in `member_dirs`, for the results' fingerprint), else its one model."""
    if not (pathlib.Path(workdir) / ENSEMBLE_FILE).is_file():
        return train.load_model(workdir)
    model, first = load(workdir)
    return dataclasses.replace(first, model=model, member_dirs=tuple(str(w) for w in model.workdirs))
