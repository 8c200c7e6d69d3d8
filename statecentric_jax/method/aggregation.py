"""Expert data aggregation (DAgger-style) on the training problems of a trained run.

Each round decodes the problems of `config.aggregation.splits` (train and validation; never a
test split) with the run's model and configured strategy. Along each decoded path s_0..s_n the
quantity g(t) = t + h*(s_t), with h* the optimal remaining cost, is non-decreasing, and equals
h*(s_0) exactly while the path is still optimal. So the first state where the decoder leaves the
expert's optimal cost-to-go (or wanders in a loop) is found by binary search over t, with
Fast Downward A*+LM-cut started at the probed states: about log2(n) planner calls per problem,
none for a path of optimal length. The decodings are dealt into `data.jobs` processes, and the planner
calls (binary searches, random walks) are made `data.jobs` at a time ahead, as each problem's probes
depend on its own answers only: the round is that of one process. Every optimal plan the planner
returns, from on-path states (other optimal paths) and off-path ones (how to recover), becomes a trajectory; the
states are embedded with the run's encoder and added to the training data (also those found on
validation problems by default: validation success is then no longer held out, our own
larger problems are; `aggregation.splits=train` keeps validation unseen), and the transition
model and the cost-to-go are retrained (`aggregation.retrain=value`: the cost-to-go only, so the
transition model, its size and its speed stay those of the first training); the validation
split still selects the model. An
unsolved instance that reports no path (best-first out of budget) is rolled out with the
paper's beam search instead, the learned policy's own path. The training problems stay the
same; only the labelled states grow. `aggregation.budget` caps a round's best-first expansions per
problem (0: the config's `decode.budget`): a problem out of that budget is rolled out as above, so a
larger budget only buys the path of a search that solves late.

`aggregation.alternative_plans=k` adds a round 0 before them, without decoding: up to k other
optimal plans per problem, to show the model more than one expert path. Each leaves the expert's
plan s_0..s_T at some step t for another successor s' with t + 1 + h*(s') = T (one planner call
per candidate s', at most `_TRIES_PER_PLAN` x k calls per problem) and becomes the trajectory
s_t, s', ... to the goal. Candidates whose action the expert takes later come first (doing an
independent action earlier keeps the plan optimal), each group in a fixed pseudo-random order.
`aggregation.random_walks=k` adds to round 0 up to k states off the expert's plans per problem:
each a random walk of 1 to `walk_steps` steps from a state of the plan (pseudo-random, fixed per
problem), labelled with an optimal plan from it, which becomes a trajectory. The expert plans
show a cost-to-go only states on the way to the goal; deeper WL features (`value.embedding=own`)
need to see more states of the same problems than that to fit weights that carry over.

On disk, inside the run's workdir:

  aggregation.json                          finished rounds: decoded, solved, deviations, extra
                                            trajectories and states, planner calls and seconds
  aggregation/round<k>/problems/<name>.pddl a problem started in a visited state
  aggregation/round<k>/calls/<name>.json    one planner call each (reused by a resumed round)
  aggregation/round<k>/trajectories.jsonl   the round's trajectories (plan_generation's format,
                                            plus split, source_file, step, round)
  aggregation/round<k>/collected.json       written last: the round's data is complete
                                            (round0: the other optimal plans and the labelled
                                            random-walk states, when configured)

and, shared by every run of the domain, beside its expert plans (`plan_generation.solve_stored`):

  <plans cache>/<domain>/planner-calls/<digest>.json   each planner call by the contents of its domain
                                                       and problem files: runs that differ only in what
                                                       they train (e.g. selection's candidates) plan
                                                       the same round-0 states once

A killed round resumes: its finished planner calls are read back, and a round whose data is
complete only retrains. Finished rounds (listed in aggregation.json) are never redone. Rounds of
another configuration (where the cache is, and how the PDDL root is spelled, do not count) are
removed, and the model they retrained is trained again on the first training's data before
round 1 decodes with it, so the rounds end where a fresh run's end.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import pathlib
import random
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import ml_collections
import numpy as np
from absl import logging

from statecentric_jax import config as config_lib
from statecentric_jax.atomic import write_text
from statecentric_jax.embedding import datasets
from statecentric_jax.embedding.datasets import EmbeddedSplit, trajectories_path
from statecentric_jax.embedding.encoders import Encoder, WLEncoder
from statecentric_jax.learning import train, value
from statecentric_jax.method import config as method_config
from statecentric_jax.method import shards
from statecentric_jax.method.evaluation import cost_to_go_for
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import Task, load_task, normalize_action, problem_from_state
from statecentric_jax.problems import fast_downward, layout, plan_generation
from statecentric_jax.problems.plan_generation import read_trajectories
from statecentric_jax.search.base import DecodeConfig, decode_config
from statecentric_jax.search.decoding import decode

SUMMARY_FILE = "aggregation.json"
AGGREGATION_DIR = "aggregation"
_TRIES_PER_PLAN = 3  # round 0: planner calls per wanted plan and problem, at most


class _Capped(Exception):
    """The round's planner calls are used up."""


def _guard(split: str) -> None:
    """The planner never sees a test problem: only train and validation problems are aggregated."""
    if split not in method_config.AGGREGATION_SPLITS:
        raise ValueError(f"expert data aggregation never plans for the '{split}' split (test problems stay unseen)")


def _identity(config: ml_collections.ConfigDict | dict) -> dict:
    """What the finished rounds depend on: the run's training identity (`config.training_identity`) but the
    number of rounds (more rounds go on)."""
    identity = config_lib.training_identity(config)
    identity["aggregation"].pop("rounds")
    return identity


def _read_summary(workdir: pathlib.Path, config: ml_collections.ConfigDict) -> dict:
    """{"config", "model", "rounds"} of this config's finished rounds ("model": the digest of the model they
    trained; None: the first training's). Another config's rounds are removed; they trained the model in the
    workdir, so "model" then names no model, and `_stale` has it trained again on the first training's data."""
    path = workdir / SUMMARY_FILE
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        if _identity(summary["config"]) == _identity(config) and isinstance(summary["rounds"], list):
            return summary
    except FileNotFoundError:
        return {"config": _identity(config), "model": None, "rounds": []}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    logging.warning("%s: aggregation of another configuration (or unreadable): starting over", path)
    shutil.rmtree(workdir / AGGREGATION_DIR, ignore_errors=True)
    summary = {"config": _identity(config), "model": "", "rounds": []}
    write_text(path, json.dumps(summary, indent=1) + "\n")  # a kill from here on still starts from the first model
    return summary


def _model_digest(workdir: pathlib.Path) -> str:
    """The trained model's files: tells whether the workdir still holds the last round's model."""
    files = sorted(p for p in (workdir / train.CHECKPOINT_DIR).rglob("*") if p.is_file())
    files += [p for p in (workdir / value.VALUE_FILE,) if p.is_file()]
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(workdir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:20]


def _stale(workdir: pathlib.Path, summary: dict) -> bool:
    """The workdir's model is not the one the finished rounds trained: trained again from scratch since (e.g. a
    rerun of launch/train.py), or by another configuration's rounds (`_read_summary`)."""
    return summary["model"] is not None and summary["model"] != _model_digest(workdir)


def _round_indices(config: ml_collections.ConfigDict) -> list[int]:
    """The configured rounds in order: 0 (other optimal plans, random-walk states) when configured, then 1..rounds."""
    first = 0 if config.aggregation.alternative_plans or config.aggregation.random_walks else 1
    return list(range(first, config.aggregation.rounds + 1))


def pending(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> bool:
    """Whether `workdir` lacks some configured round, or its model is not the last round's (cheap)."""
    rounds, workdir = _round_indices(config), pathlib.Path(workdir)
    if not rounds:
        return False
    summary = _read_summary(workdir, config)
    return len(summary["rounds"]) < len(rounds) or _stale(workdir, summary)


def _state_key(task: Task, state: frozenset[str]) -> str:
    digest = hashlib.sha256(task.problem_file.encode())
    digest.update("\n".join(sorted(state)).encode())
    return digest.hexdigest()[:20]


def _read_json(path: pathlib.Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class _Planner:
    """Optimal remaining costs h*(s) from Fast Downward, cached per state across rounds, capped per round.
    Each call's result is also kept by content in `shared` (`plan_generation.solve_stored`), so another
    run asking for the same state problem under the same limits (e.g. the same labelled random walks of
    a run with other cost-to-go settings) reads it instead of planning again."""

    def __init__(
        self, workdir: pathlib.Path, round_index: int, config: ml_collections.ConfigDict, shared: pathlib.Path
    ):
        settings = config.aggregation
        self.dir = workdir / AGGREGATION_DIR / f"round{round_index}"
        self.shared = shared
        self.jobs = config.data.jobs or os.cpu_count() or 1
        self.round, self.cap = round_index, settings.max_planner_calls
        self.search = fast_downward.SearchConfig(fast_downward.ASTAR_LMCUT, float(settings.time_limit))
        self.known: dict[str, float | None] = {}  # state key -> h* from earlier rounds
        for k in range(round_index):
            for path in sorted((workdir / AGGREGATION_DIR / f"round{k}" / "calls").glob("*.json")):
                record = _read_json(path)
                if record is not None:
                    self.known[record["key"]] = _cost(record)
        self.records: dict[str, dict] = {}  # this round's calls, by state key

    def optimal(self, split: str, task: Task, step: int, state: frozenset[str], tag: str = "") -> float | None:
        """h*(state): a plan length, inf if unsolvable, None if the planner gave up; raises _Capped.
        `tag` tells apart the files of several states probed at one step."""
        _guard(split)
        key = _state_key(task, state)
        if key in self.known:
            return self.known[key]
        if key not in self.records:
            name = self.name(split, task, step, tag)
            cached = self.cached(name, key)
            if len(self.records) >= self.cap:
                raise _Capped
            self.records[key] = cached if cached is not None else self._call(split, task, step, state, name, key)
        return _cost(self.records[key])

    def name(self, split: str, task: Task, step: int, tag: str) -> str:
        """A call's name, and the name of the problem it plans: part of its contents, so of its shared record."""
        return f"{split}-{pathlib.Path(task.problem_file).stem}-t{step:04d}{tag}"

    def cached(self, name: str, key: str) -> dict | None:
        """The call `name` of this round made before it was interrupted, if it asked for this state."""
        record = _read_json(self.dir / "calls" / f"{name}.json")
        return record if record is not None and record.get("key") == key else None

    def solve(self, task: Task, state: frozenset[str], name: str) -> tuple[pathlib.Path, dict]:
        """Fast Downward's record for the problem started in `state`, read by content where it was planned before."""
        problem_file = self.dir / "problems" / f"{name}.pddl"
        problem_file.parent.mkdir(parents=True, exist_ok=True)
        write_text(problem_file, problem_from_state(task, state, name))
        domain_file = pathlib.Path(task.domain_file)
        return problem_file, plan_generation.solve_stored(domain_file, problem_file, [self.search], self.shared)

    def _call(self, split: str, task: Task, step: int, state: frozenset[str], name: str, key: str) -> dict:
        problem_file, result = self.solve(task, state, name)
        (self.dir / "calls").mkdir(exist_ok=True)
        record = {
            "key": key,
            "name": name,
            "split": split,
            "source_file": task.problem_file,
            "step": step,
            "state": sorted(state),
            "problem_file": str(problem_file.resolve()),
            **{name: result[name] for name in ("status", "plan", "seconds", "message")},
        }
        write_text(self.dir / "calls" / f"{name}.json", json.dumps(record) + "\n")
        return record

    def plan(self, task: Task, state: frozenset[str]) -> list[str]:
        """This round's optimal plan from `state`, after `optimal` found it."""
        return self.records[_state_key(task, state)]["plan"]


class _Lookahead:
    """Answers what a round's `_Planner` will be asked, before it is asked, `jobs` Fast Downward processes at a
    time: each answer is kept by content (`shared`), where the planner, asked in order afterwards, reads it. What
    the planner asks, records and cuts at its cap is unchanged; at most the calls left under its cap are made
    ahead."""

    def __init__(self, planner: _Planner):
        self.planner, self.left, self.lock = planner, planner.cap - len(planner.records), threading.Lock()

    def optimal(self, split: str, task: Task, step: int, state: frozenset[str], tag: str = "") -> float | None:
        _guard(split)
        key = _state_key(task, state)
        if key in self.planner.known:
            return self.planner.known[key]
        name = self.planner.name(split, task, step, tag)
        cached = self.planner.records.get(key) or self.planner.cached(name, key)
        if cached is not None:
            return _cost(cached)
        with self.lock:
            if self.left <= 0:
                raise _Capped
            self.left -= 1
        return _cost(self.planner.solve(task, state, name)[1])

    def states(self, split: str, task: Task, wanted: Sequence[tuple[int, frozenset[str], str]]) -> None:
        """The states (step, state, tag) of one problem that the planner will be asked for."""
        self._all(lambda probe: self.optimal(split, task, *probe), wanted)

    def first_deviations(self, items: Sequence[_Decoded]) -> None:
        """The probes of `_first_deviation` on each item: each item's depend only on its own answers."""
        self._all(lambda item: _first_deviation(self, item), items)

    def _all(self, ask: Callable[[Any], object], items: Sequence[Any]) -> None:
        if self.planner.jobs < 2 or len(items) < 2:
            return  # asked one at a time anyway
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.planner.jobs)
        try:
            for future in [pool.submit(ask, item) for item in items]:
                with contextlib.suppress(_Capped):
                    future.result()
        except BaseException:  # Ctrl-C: stop now; the answers so far are kept by content
            pool.shutdown(wait=False, cancel_futures=True)
            fast_downward.kill_running()
            raise
        pool.shutdown()


def _shared_calls(config: ml_collections.ConfigDict, plans_dir: pathlib.Path) -> pathlib.Path:
    """Where every run of the domain keeps its planner calls by content: beside the expert plans."""
    return plans_dir / config.data.domain / plan_generation.PLANNER_CALLS_DIR


def _cost(record: dict) -> float | None:
    if record["status"] == "solved":
        return float(len(record["plan"]))
    return math.inf if record["status"] == "unsolvable" else None


@dataclasses.dataclass
class _Decoded:
    split: str
    task: Task
    plan: list[str]  # the decoded path (or the beam rollout of an unsolved instance without one)
    solved: bool
    expert: int | None  # the expert's plan length, when it is known to be optimal


def _expert_optimal(plans_dir: pathlib.Path, domain: str, split: str) -> dict[str, int]:
    """Optimal plan lengths of the split's problems (those Fast Downward solved with A*+LM-cut)."""
    manifest = _read_json(plans_dir / domain / split / "manifest.json") or {"problems": []}
    return {
        p["problem"]: len(p["plan"])
        for p in manifest["problems"]
        if p.get("status") == "solved" and p.get("config") == fast_downward.ASTAR_LMCUT
    }


def _decode_splits(config: ml_collections.ConfigDict, workdir: pathlib.Path, plans_dir: pathlib.Path) -> list[_Decoded]:
    """The run's decodings of the aggregation splits' problems, dealt into `data.jobs` processes (each problem's
    search is its own, so the paths are those of one process)."""
    # the configured strategy (a copied run may record another), on the path it searched: not shortened after
    settings = dataclasses.replace(decode_config(config), action_elimination=False)
    if config.aggregation.budget:
        settings = dataclasses.replace(settings, budget=config.aggregation.budget)
    domain = config.data.domain
    domain_file = layout.domain_file(config.data.pddl_root, domain).resolve()
    problems = []
    for split in method_config.aggregation_splits(config):
        _guard(split)
        problems += [(split, p.resolve()) for p in layout.problem_files(config.data.pddl_root, domain, split)]
    parts = max(1, min(config.data.jobs or os.cpu_count() or 1, len(problems)))
    dealt = {
        str(k): (str(workdir), settings, str(domain_file), [str(p) for _, p in problems[k::parts]])
        for k in range(parts)
    }
    if parts == 1:
        paths = {"0": _decode_problems(*dealt["0"])}
    else:
        values = shards.run_all(_decode_problems, dealt, workdir, "aggregation decoding")
        paths = {key: cast(list[tuple[list[str], bool]], value) for key, value in values.items()}
    optimal = {split: _expert_optimal(plans_dir, domain, split) for split in method_config.aggregation_splits(config)}
    decoded = []
    for index, (split, problem_file) in enumerate(problems):
        plan, solved = paths[str(index % parts)][index // parts]
        task = load_task(domain_file, problem_file)
        decoded.append(_Decoded(split, task, plan, solved, optimal[split].get(problem_file.stem)))
    return decoded


def _decode_problems(
    workdir: str, settings: DecodeConfig, domain_file: str, problem_files: list[str]
) -> list[tuple[list[str], bool]]:
    """Each problem's decoded path and whether it solves, in order: the path searched, or, where the search
    reports none, the learned policy's own (beam search), to find where it strays."""
    loaded = train.load_model(workdir)
    tasks = [load_task(domain_file, file) for file in problem_files]
    results = decode(tasks, loaded.model, loaded.encoder, settings, cost_to_go=cost_to_go_for(loaded, settings))
    pathless = [i for i, r in enumerate(results) if not r.solved and not r.plan]
    if pathless and settings.strategy != "beam":
        beam = dataclasses.replace(settings, strategy="beam")
        for i, rollout in zip(pathless, decode([tasks[i] for i in pathless], loaded.model, loaded.encoder, beam)):
            results[i] = dataclasses.replace(rollout, solved=False)
    return [(result.plan, result.solved) for result in results]


def _first_deviation(planner: _Planner | _Lookahead, item: _Decoded) -> int | None:
    """The first step t of the decoded path with t + h*(s_t) > h*(s_0) (binary search), or None if the
    path never leaves the optimal cost-to-go (or the planner could not tell)."""
    states = simulate(item.task, item.plan, require_goal=False)
    n = len(item.plan)
    h0 = item.expert if item.expert is not None else planner.optimal(item.split, item.task, 0, states[0])
    if h0 is None or n == 0 or (item.solved and n == h0):
        return None
    if not item.solved:
        h = planner.optimal(item.split, item.task, n, states[n])
        if h is None or n + h == h0:
            return None
    lo, hi = 0, n  # g(lo) == h0 < g(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        h = planner.optimal(item.split, item.task, mid, states[mid])
        if h is None:
            return None
        lo, hi = (mid, hi) if mid + h == h0 else (lo, mid)
    return hi


def _trajectory(record: dict, task: Task, round_index: int) -> dict:
    """A planner call's plan as a trajectory (plan_generation's keys and more), replayed from its state."""
    states = simulate(dataclasses.replace(task, init=frozenset(record["state"])), record["plan"])
    return {
        "problem": record["name"],
        "problem_file": record["problem_file"],
        "domain_file": task.domain_file,
        "plan": record["plan"],
        "static": sorted(task.static),
        "states": [sorted(state) for state in states],
        "split": record["split"],
        "source_file": record["source_file"],
        "step": record["step"],
        "round": round_index,
    }


def _collect(
    config: ml_collections.ConfigDict, workdir: pathlib.Path, round_index: int, plans_dir: pathlib.Path
) -> dict:
    """Decode, find deviations, ask the planner; write the round's trajectories and statistics."""
    start = time.perf_counter()
    planner = _Planner(workdir, round_index, config, _shared_calls(config, plans_dir))
    decoded = _decode_splits(config, workdir, plans_dir)
    order = sorted(
        decoded, key=lambda d: (d.solved, method_config.AGGREGATION_SPLITS.index(d.split), d.task.problem_file)
    )
    _Lookahead(planner).first_deviations(order)
    deviations, analysed = 0, 0
    for item in order:
        try:
            deviations += _first_deviation(planner, item) is not None
        except _Capped:
            break
        analysed += 1
    tasks = {d.task.problem_file: d.task for d in decoded}
    records = sorted(planner.records.values(), key=lambda r: r["name"])
    trajectories = [
        _trajectory(r, tasks[r["source_file"]], round_index) for r in records if r["status"] == "solved" and r["plan"]
    ]
    splits = method_config.aggregation_splits(config)
    decoded_counts = {s: sum(d.split == s for d in decoded) for s in splits}
    solved = {s: sum(d.split == s and d.solved for d in decoded) for s in splits}
    counts = {"decoded": decoded_counts, "solved": solved, "analysed": analysed, "deviations": deviations}
    return _finish_round(planner, splits, trajectories, counts, start)


def _finish_round(planner: _Planner, splits: list[str], trajectories: list[dict], counts: dict, start: float) -> dict:
    """Write the round's trajectories, then its statistics (`collected.json`, last: the round is complete)."""
    records = list(planner.records.values())
    planner.dir.mkdir(parents=True, exist_ok=True)
    write_text(planner.dir / "trajectories.jsonl", "".join(json.dumps(t) + "\n" for t in trajectories))
    stats = {
        "round": planner.round,
        **counts,
        "planner_calls": len(records),
        "planner_failures": sum(r["status"] not in ("solved", "unsolvable") for r in records),
        "planner_seconds": round(sum(r["seconds"] for r in records), 3),
        "extra_trajectories": {s: sum(t["split"] == s for t in trajectories) for s in splits},
        "extra_states": sum(len(t["states"]) for t in trajectories),
        "collect_seconds": round(time.perf_counter() - start, 3),
    }
    write_text(planner.dir / "collected.json", json.dumps(stats, indent=1) + "\n")
    return stats


def _alternatives(
    planner: _Planner, split: str, task: Task, expert: list[frozenset[str]], plan: list[str], wanted: int
) -> list[dict]:
    """Up to `wanted` optimal plans that leave the expert's path s_0..s_T at some step t (see the module
    docstring), as trajectories from s_t; raises _Capped when the round's planner calls run out."""
    length = len(expert) - 1
    successors = SuccessorGenerator(task)
    actions = [normalize_action(a) for a in plan]
    candidates = [
        (action not in actions[t + 1 :], t, index, action, child)
        for t in range(length)
        for index, (op, child) in enumerate(successors.successors(expert[t]))
        if child != expert[t + 1]
        for action in [normalize_action(op.name)]
    ]
    stem = pathlib.Path(task.problem_file).stem
    random.Random(stem).shuffle(candidates)  # the same order in every run and seed
    candidates.sort(key=lambda c: c[0])  # an expert's later action done earlier first: often optimal too
    found: list[dict] = []
    tried: set[tuple[int, frozenset[str]]] = set()  # two operators may lead to one state
    for _, t, index, action, child in candidates[: _TRIES_PER_PLAN * wanted]:
        if len(found) == wanted:
            break
        if (t, child) in tried:
            continue
        tried.add((t, child))
        if planner.optimal(split, task, t + 1, child, tag=f"-a{index:03d}") != length - t - 1:
            continue
        detour = {  # the fields of a planner call's record that `_trajectory` reads
            "name": f"{split}-{stem}-alternative{len(found)}",
            "problem_file": task.problem_file,
            "state": expert[t],
            "plan": [action, *planner.plan(task, child)],
            "split": split,
            "source_file": task.problem_file,
            "step": t,
        }
        found.append(_trajectory(detour, task, 0))
    return found


def _random_walks(
    planner: _Planner, split: str, task: Task, expert: list[frozenset[str]], wanted: int, max_steps: int
) -> list[dict]:
    """Up to `wanted` states off the expert's path, each reached by a random walk of 1 to `max_steps` steps
    from one of its states, with an optimal plan from there, as trajectories; raises _Capped when the
    round's planner calls run out. Walks that end on the path, in a state seen before or at a goal add nothing."""
    successors = SuccessorGenerator(task)
    stem = pathlib.Path(task.problem_file).stem
    walk = random.Random(f"walks-{stem}")  # the same walks in every run and seed
    seen = set(expert)
    walks: list[tuple[str, int, frozenset[str]]] = []  # (number, step, end state) of the walks that end somewhere new
    for index in range(wanted):
        step = walk.randrange(len(expert))
        state = expert[step]
        for _ in range(walk.randint(1, max_steps)):
            children = [child for _, child in successors.successors(state) if child != state]
            if not children:
                break
            state = walk.choice(children)
        if state not in seen:
            seen.add(state)
            walks.append((f"{index:03d}", step, state))
    _Lookahead(planner).states(split, task, [(step, state, f"-w{number}") for number, step, state in walks])
    found: list[dict] = []
    for number, step, state in walks:
        cost = planner.optimal(split, task, step, state, tag=f"-w{number}")
        if cost is None or not 0 < cost < math.inf:
            continue
        labelled = {  # the fields of a planner call's record that `_trajectory` reads
            "name": f"{split}-{stem}-walk{number}",
            "problem_file": task.problem_file,
            "state": state,
            "plan": planner.plan(task, state),
            "split": split,
            "source_file": task.problem_file,
            "step": step,
        }
        found.append(_trajectory(labelled, task, 0))
    return found


def _collect_round0(config: ml_collections.ConfigDict, workdir: pathlib.Path, plans_dir: pathlib.Path) -> dict:
    """Round 0: other optimal plans and labelled random-walk states of each train/validation problem;
    writes its trajectories and statistics."""
    start = time.perf_counter()
    planner = _Planner(workdir, 0, config, _shared_calls(config, plans_dir))
    domain = config.data.domain
    domain_file = layout.domain_file(config.data.pddl_root, domain).resolve()
    splits = method_config.aggregation_splits(config)
    trajectories: list[dict] = []
    analysed, wanted, walks = 0, config.aggregation.alternative_plans, config.aggregation.random_walks
    try:
        for split in splits:
            _guard(split)
            optimal = _expert_optimal(plans_dir, domain, split)
            folder = (layout.domain_dir(config.data.pddl_root, domain) / split).resolve()
            for record in read_trajectories(trajectories_path(plans_dir, domain, split)):
                task = load_task(domain_file, folder / f"{record['problem']}.pddl")
                expert = [frozenset(state) for state in record["states"]]
                if wanted and record["problem"] in optimal:  # other plans of the expert's length, if optimal
                    trajectories += _alternatives(planner, split, task, expert, record["plan"], wanted)
                if walks:
                    trajectories += _random_walks(planner, split, task, expert, walks, config.aggregation.walk_steps)
                analysed += 1
    except _Capped:
        pass
    counts = {"decoded": {}, "solved": {}, "analysed": analysed, "deviations": 0}
    return _finish_round(planner, splits, trajectories, counts, start)


def _source_tasks(records: Sequence[dict]) -> dict[str, Task]:
    """The problems the aggregated trajectories came from, each loaded once."""
    tasks: dict[str, Task] = {}
    for r in records:
        if r["source_file"] not in tasks:
            tasks[r["source_file"]] = load_task(r["domain_file"], r["source_file"])
    return tasks


def _extended(base: EmbeddedSplit, records: Sequence[dict], encoder: Encoder) -> EmbeddedSplit:
    """`base` plus the aggregated trajectories, embedded with the run's encoder."""
    if not records:
        return base
    tasks = _source_tasks(records)
    pairs = [(tasks[r["source_file"]], frozenset(state)) for r in records for state in r["states"]]
    states = np.asarray(encoder.embed(pairs), np.float32)
    goals = np.asarray(encoder.embed_goals([tasks[r["source_file"]] for r in records]), np.float32)
    bounds = np.cumsum([len(r["states"]) for r in records])[:-1]
    return dataclasses.replace(
        base,
        problems=base.problems + [r["problem"] for r in records],
        trajectories=base.trajectories + np.split(states, bounds),
        goals=np.concatenate([base.goals, goals]),
        num_objects=base.num_objects + [len(tasks[r["source_file"]].objects) for r in records],
    )


def _own_phi_fitted(
    config: ml_collections.ConfigDict, plans_dir: pathlib.Path, value_data: value.ValueData, records: Sequence[dict]
) -> value.ValueData:
    """`value.wl_vocabulary=fitted`: the cost-to-go's own φ with its colours collected from every state it is
    fitted on (the train and validation plans and the aggregated trajectories), and both splits embedded with
    it (goal paths, if any, beside it as before). Colours that only the aggregated states show would otherwise
    be dropped as unseen."""
    assert isinstance(value_data.phi, WLEncoder)  # an own φ is WL (config.check)
    domain = config.data.domain
    loaded = {
        s: datasets.load_split_tasks(config.data.pddl_root, plans_dir, domain, s) for s in ("train", "validation")
    }
    tasks = _source_tasks(records)
    aggregated = [(tasks[r["source_file"]], [frozenset(state) for state in r["states"]]) for r in records]
    phi = WLEncoder.fit(domain, loaded["train"] + loaded["validation"] + aggregated, value_data.phi.settings)
    features = value.features_encoder(phi, value_data.goal_paths)
    embedded = {s: datasets.embed_loaded(features, loaded[s], domain, features.kind, s) for s in loaded}
    return dataclasses.replace(value_data, train=embedded["train"], validation=embedded["validation"], phi=phi)


def _retrain(
    config: ml_collections.ConfigDict,
    workdir: pathlib.Path,
    round_index: int,
    splits: dict[str, EmbeddedSplit],
    encoder: Encoder,
    value_data: value.ValueData | None,
    plans_dir: pathlib.Path,
) -> float:
    """Train the transition model and the cost-to-go again on the expert data of the rounds up to round_index
    (`aggregation.retrain=value`: the cost-to-go only; the transition model stays the one trained first).
    A cost-to-go with data of its own (`value_data`: its own φ, or goal paths beside φ) gets the new
    trajectories embedded as it reads them (with an own φ and `value.wl_vocabulary=fitted`, by one whose
    colours are collected again, from them too)."""
    start = time.perf_counter()
    records = [
        record
        for k in _round_indices(config)
        if k <= round_index
        for record in read_trajectories(workdir / AGGREGATION_DIR / f"round{k}" / "trajectories.jsonl")
    ]
    if value_data is not None:
        if value_data.own and config.value.wl_vocabulary == "fitted" and records:
            value_data = _own_phi_fitted(config, plans_dir, value_data, records)
        value_data = dataclasses.replace(value_data, train=_extended(value_data.train, records, value_data.encoder))
    if config.aggregation.retrain == "value":
        # the transition model's embedding of the new data is read only by a cost-to-go without data of its own
        extended = splits["train"] if value_data is not None else _extended(splits["train"], records, encoder)
        cost_to_go, fitted = train.fit_cost_to_go(config, extended, splits["validation"], value_data)
        cost_to_go.save(workdir)
        logging.info("cost-to-go refitted with %d expert trajectories more: %s", len(records), fitted)
    else:
        extended = _extended(splits["train"], records, encoder)
        train.train_model(config, extended, splits["validation"], encoder, workdir, value_data)
    return round(time.perf_counter() - start, 3)


def run(
    config: ml_collections.ConfigDict,
    workdir: str | os.PathLike,
    splits: dict[str, EmbeddedSplit],
    encoder: Encoder,
    plans_dir: str | os.PathLike,
    value_data: value.ValueData | None = None,
) -> list[dict]:
    """The configured rounds on the trained run in `workdir`, resumed where they stopped; returns every
    round's statistics, also written to `<workdir>/aggregation.json`. `value_data`: the training data of a
    cost-to-go with its own φ (`pipeline.prepare_value_data`)."""
    config_lib.check(config)
    workdir, plans_dir = pathlib.Path(workdir), pathlib.Path(plans_dir)
    summary = _read_summary(workdir, config)
    rounds = summary["rounds"]

    def retrain(round_index: int) -> float:
        seconds = _retrain(config, workdir, round_index, splits, encoder, value_data, plans_dir)
        summary["model"] = _model_digest(workdir)
        return seconds

    def restore() -> None:
        if _stale(workdir, summary):  # the finished rounds' data is on disk: train on it, never collect again
            last = rounds[-1]["round"] if rounds else -1  # -1: the first training's data alone
            logging.info("%s: not the model of round %d; training it again", workdir, max(last, 0))
            retrain(last)
            write_text(workdir / SUMMARY_FILE, json.dumps(summary, indent=1) + "\n")

    for round_index in _round_indices(config)[len(rounds) :]:
        stats = _read_json(workdir / AGGREGATION_DIR / f"round{round_index}" / "collected.json")
        if stats is None:  # decoding needs the model of the previous round
            restore()
            if round_index == 0:
                stats = _collect_round0(config, workdir, plans_dir)
            else:
                stats = _collect(config, workdir, round_index, plans_dir)
        rounds.append({**stats, "retrain_seconds": retrain(round_index)})
        write_text(workdir / SUMMARY_FILE, json.dumps(summary, indent=1) + "\n")
        logging.info("aggregation round %d: %s", round_index, rounds[-1])
    restore()
    return rounds
