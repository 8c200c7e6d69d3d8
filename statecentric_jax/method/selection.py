"""Automatic per-domain selection of the recommended configuration's settings, on training problems only.

The menu is a short sequence of steps, each one alternative to the current settings, tried greedily
in order and kept when it solves more selection problems (ties: fewer plan steps, then fewer
expansions). A step kept late can make an earlier one pay (a cost-to-go feature may tell only once the
relaxed-plan queue gets the search going), so the menu is tried again, each step not kept and each
candidate not tried before, while a pass keeps a step (at most `selection.passes` passes). Every step
is a part of the recommended method that won on one domain:

  cost_to_go_features  the cost-to-go on a WL φ of its own (3 iterations, set hash, colours from every
                       state it is fitted on) with labelled random-walk states   (Blocks)
  goal_paths           goal paths of 4 edges beside the cost-to-go's φ            (Logistics)
  aggregation          2 rounds of expert data aggregation that refit the cost-to-go (Logistics)
  value_weight         the transition model's distance weighted 1 in the priority, not a tie-break (VisitAll)
  path_weight          + 0.2 x plan length so far in the priority (shorter plans)  (Logistics)
  unclipped            cost-to-go estimates below zero kept, not read as zero: fitted on small problems,
                       the linear estimate falls below zero on larger ones well before the goal (IPC
                       Satellite, on its training problems)
  relaxed_plan         every other expansion from a queue ordered by FF's relaxed-plan heuristic, helpful
                       actions first (`decode.exploration`): a symbolic estimate beside the learned one,
                       where that one credits steps no goal needs (IPC Satellite, on its training problems
                       and our own larger ones); only the children of helpful actions are estimated and
                       join the learned queue (`decode.estimate_helpful_only`): where a state has thousands
                       of successors, estimating each costs more than all else (our own larger Satellite
                       and Rovers problems)
  dead_ends            a node whose goal is out of reach with deletes ignored closed unexpanded: no plan
                       leaves it, and a learned cost-to-go need not see it (IPC Sokoban, on its training
                       problems)
  eliminated           a solved plan's unneeded steps dropped (greedy action elimination): a search's
                       detours stay in its plan otherwise (IPC Rovers and Satellite, on their training
                       problems)
  symmetry             of the successors that differ only by interchangeable objects, one kept
                       (`planning/symmetry.py`): where a state has many, as the sandwiches that can be
                       made of any bread and content portion, the others cost a search only time (IPC
                       Childsnack, on our own larger problems)
  boosted              `relaxed_plan` with a third queue of the helpful actions' children alone, taken the next
                       1,000 turns after each relaxed plan shorter than any before (Fast Downward's default
                       boost of preferred operators): where the learned estimate is flat, a search making
                       progress follows the relaxed plan instead of widening its plateau (IPC Childsnack, on
                       its training problems)

The first three change what is trained (one more run each); the last eight only how it decodes (the
same run, decoded again). Selection problems are larger than the ones fitted on: a training view's
`selection` split (IPC layout, `layout.training_view`), else `validation`. Where no candidate solves a
single one of them, the scores tie and tell nothing: the menu is then tried on `validation`, the smaller
training problems whose expert plans the fit is validated on. Where neither the defaults nor a decoding
step on them solves one (pass 0 in `tried`), no step that trains is tried on the larger problems first:
those runs take the most time, and they are trained only for the choice on `validation`. The budget
per selection problem is `selection.budget` expansions; the final run keeps the config's `decode.budget`.
Two steps are scored from the search of the same settings without them where that search is theirs, not
decoded again: `eliminated` changes no search, only the plans it found (its solved plans are shortened);
`unclipped` changes a search only where it read an estimate at or below zero (each result counts them).

On disk, below the domain's workdir:

  selection/<training label>/      one trained run per training variant (learning/train.py layout);
                                   its decodings in eval/selection-<decode label>/ (none for a
                                   step scored without decoding), the problems dealt into `data.jobs` processes
                                   (0: one per core), each in its shards/<k>-of-<n>/ there
  selection.json                   the menu, every tried candidate's score and split, the chosen settings,
                                   seconds
  run/                             the chosen candidate's run with the chosen settings in its config.json,
                                   and a copy of selection.json: what planning loads
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import pathlib
import shutil
import time
from collections.abc import Mapping
from typing import Any

import ml_collections
from absl import logging

from statecentric_jax import config as config_lib
from statecentric_jax.atomic import write_text
from statecentric_jax.embedding import datasets
from statecentric_jax.errors import InputError
from statecentric_jax.learning import train
from statecentric_jax.method import evaluation, pipeline, shards
from statecentric_jax.planning.elimination import eliminate_actions
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout, plan_generation
from statecentric_jax.sections import require_int

SELECTION_FILE = "selection.json"
RUN_DIR = "run"
SELECTION_DIR = "selection"
FALLBACK_SPLIT = "validation"  # the smaller training problems: selected on where no larger one is solved


@dataclasses.dataclass(frozen=True)
class Step:
    """One menu entry: config fields (dotted names) set together, and whether it needs a new training."""

    name: str
    settings: Mapping[str, Any]
    trains: bool


MENU = (
    Step(
        "cost_to_go_features",
        {
            "value.embedding": "own",
            "value.wl_iterations": 3,
            "value.wl_multiset_hash": False,
            "value.wl_vocabulary": "fitted",
            "aggregation.random_walks": 20,
            "aggregation.max_planner_calls": 600,
        },
        True,
    ),
    Step("goal_paths", {"value.goal_paths": 4}, True),
    Step("aggregation", {"aggregation.rounds": 2, "aggregation.max_planner_calls": 100}, True),
    Step("value_weight", {"decode.value_weight": 1.0}, False),
    Step("path_weight", {"decode.path_weight": 0.2}, False),
    Step("unclipped", {"decode.clip_cost_to_go": False}, False),
    Step("relaxed_plan", {"decode.exploration": "relaxed_plan", "decode.estimate_helpful_only": True}, False),
    Step("dead_ends", {"decode.prune_dead_ends": True}, False),
    Step("eliminated", {"decode.action_elimination": True}, False),
    Step("symmetry", {"decode.prune_symmetric": True}, False),
    Step(
        "boosted",
        {"decode.exploration": "relaxed_plan", "decode.estimate_helpful_only": True, "decode.preferred_boost": 1000},
        False,
    ),
)
STEPS = tuple(step.name for step in MENU)
# Decoding steps whose search is the same as without them, where `_derived` says so: their results follow
# from the search's without them, and are not decoded again.
SEARCH_ALIKE = {"decode.action_elimination": True, "decode.clip_cost_to_go": False}
DECODE_FIELDS = (
    "decode.value_weight",
    "decode.path_weight",
    "decode.clip_cost_to_go",
    "decode.exploration",
    "decode.prune_dead_ends",
    "decode.action_elimination",
    "decode.estimate_helpful_only",
    "decode.prune_symmetric",
    "decode.preferred_boost",
)


def menu_steps(config: ml_collections.ConfigDict) -> list[Step]:
    """The config's menu (`selection.steps`, comma-separated names from `STEPS`, in that order)."""
    names = [s.strip() for s in str(config.selection.steps).split(",") if s.strip()]
    unknown = sorted(set(names) - set(STEPS))
    if unknown:
        raise InputError(None, f"config selection.steps: unknown step(s) {', '.join(unknown)} (use {', '.join(STEPS)})")
    return [step for step in MENU if step.name in names]


def selection_split(config: ml_collections.ConfigDict) -> str:
    """The larger training problems a resolved config selects on: the view's `selection`, else `validation`."""
    folder = layout.domain_dir(config.data.pddl_root, config.data.domain)
    return "selection" if any((folder / "selection").glob("*.pddl")) else "validation"


def _with(config: ml_collections.ConfigDict, settings: Mapping[str, Any]) -> ml_collections.ConfigDict:
    out = config.copy_and_resolve_references()
    for dotted, value in settings.items():
        section, name = dotted.split(".")
        out[section][name] = value
    return out


def _label(settings: Mapping[str, Any], fields: Any) -> str:
    chosen = [f"{k.split('.')[1]}={settings[k]}" for k in sorted(settings) if k in fields]
    return "-".join(chosen) or "default"


def _score(results: list[dict]) -> tuple[int, int, int]:
    """Higher is better: solved problems, then fewer plan steps and expansions (unsolved: their expansions)."""
    solved = [r for r in results if r["solved"]]
    return len(solved), -sum(r["plan_length"] for r in solved), -sum(r["steps"] for r in results)


def _train(config: ml_collections.ConfigDict, run_dir: pathlib.Path) -> None:
    """Train (resumed) one candidate's run; one trained under another menu is the same run (training reads
    no `selection` setting), so a step added to the menu trains only what it needs."""
    if (run_dir / train.CONFIG_FILE).exists() and _same_training(config_lib.read(run_dir), config):
        logging.info("selection: %s already trained", run_dir.name)
        pipeline.aggregate(config, run_dir)  # a run killed during aggregation goes on
        return
    shutil.rmtree(run_dir, ignore_errors=True)
    pipeline.train_from_config(config, run_dir)


def _same_training(stored: ml_collections.ConfigDict, wanted: ml_collections.ConfigDict) -> bool:
    return config_lib.training_identity(stored) == config_lib.training_identity(wanted)


def select_and_train(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> pathlib.Path:
    """Choose the menu's settings for the config's domain on its training problems, write `selection.json`
    and the chosen run (`<workdir>/run`); returns the run's directory. Resumes what earlier calls did."""
    if not config.data.domain:
        raise InputError(None, "config data.domain is empty: name the domain (--config.data.domain=<name>)")
    start = time.perf_counter()
    workdir = pathlib.Path(workdir)
    config = pipeline.resolved(config)
    config_lib.check(config)
    for name in ("budget", "passes"):
        require_int(f"selection.{name}", config.selection[name], 1)
    steps = menu_steps(config)
    training_fields = {k for step in steps if step.trains for k in step.settings}
    tried: list[dict] = []
    found: dict[tuple[str, str], list[dict]] = {}  # (split, settings) -> the results scored, each evaluated once

    def derived(settings: dict[str, Any], split: str) -> list[dict] | None:
        """The candidate's results from those of a search scored before that is the same as its own, if any."""
        if config.decode.get("time_limit"):  # a deadline ends action elimination, and searches, where it falls
            return None
        for base in _searched_alike(settings):
            results = found.get((split, json.dumps(base, sort_keys=True)))
            if results is not None and (derivation := _derived(config, settings, base, results)) is not None:
                return derivation
        return None

    def evaluate(settings: dict[str, Any], step: str, split: str, number: int) -> tuple[int, int, int]:
        key = (split, json.dumps(settings, sort_keys=True))
        if key in found:
            return _score(found[key])
        trained = _with(config, {k: v for k, v in settings.items() if k not in DECODE_FIELDS})
        run_dir = workdir / SELECTION_DIR / _label(settings, training_fields)
        _train(trained, run_dir)
        results = derived(settings, split)
        if results is None:
            overrides = {k.split(".")[1]: v for k, v in settings.items() if k in DECODE_FIELDS}
            processes = min(config.data.jobs or os.cpu_count() or 1, len(_problem_names(config, split)))
            _decode(
                run_dir,
                split,
                _eval_dir(run_dir, split, settings),
                processes,
                budget=config.selection.budget,
                **overrides,
            )
            results = _results(run_dir, split, settings)
        found[key] = results
        score = _score(results)
        tried.append(
            {
                "step": step,
                "split": split,
                "pass": number,
                "settings": dict(settings),
                "solved": score[0],
                "plan_steps": -score[1],
                "expansions": -score[2],
                "problems": {r["problem"]: r["solved"] for r in results},
            }
        )
        logging.info("selection: %s %s on %s -> solved %d/%d", step, settings, split, score[0], len(results))
        return score

    def reachable(split: str) -> bool:
        """Whether the defaults, or a decoding step on them (pass 0 in `tried`), solve a problem of `split`: where
        none does, the split is taken as out of this search's reach, and no step that trains is tried on it."""
        probes = [(step.name, dict(step.settings)) for step in steps if not step.trains]
        return bool(evaluate({}, "start", split, 1)[0]) or any(evaluate(s, name, split, 0)[0] for name, s in probes)

    def greedy(split: str) -> tuple[dict[str, Any], tuple[int, int, int]]:
        """The menu's steps tried in order on `split`, each kept when it scores higher, in passes while a pass keeps
        one (at most `selection.passes`); a step kept, or a candidate tried, before is not tried again. The
        settings kept, and their score."""
        chosen: dict[str, Any] = {}
        best = evaluate(chosen, "start", split, 1)
        seen, kept = [chosen], set[str]()
        for number in range(1, config.selection.passes + 1):
            kept_before = len(kept)
            for step in steps:
                candidate = {**chosen, **step.settings}
                if step.name in kept or candidate in seen:
                    continue
                seen.append(candidate)
                score = evaluate(candidate, step.name, split, number)
                if score > best:
                    chosen, best = candidate, score
                    kept.add(step.name)
            if len(kept) == kept_before:
                break
        return chosen, best

    split = selection_split(config)
    fallback = split != FALLBACK_SPLIT and bool(_problem_names(config, FALLBACK_SPLIT))
    if fallback and not reachable(split):
        print(f"selection for {config.data.domain}: no decoding solves a {split} problem; on {FALLBACK_SPLIT} only")
        split = FALLBACK_SPLIT
    chosen, best = greedy(split)
    if fallback and split != FALLBACK_SPLIT and not best[0]:  # a candidate that solves one scores higher
        print(f"selection for {config.data.domain}: no candidate solves a {split} problem; again on {FALLBACK_SPLIT}")
        split = FALLBACK_SPLIT
        chosen, _ = greedy(split)

    final = _with(config, chosen)
    source = workdir / SELECTION_DIR / _label(chosen, training_fields)
    record = {
        "domain": config.data.domain,
        "selection_split": split,
        "selection_problems": _problem_names(config, split),
        **_fitted_on(config),
        "budget_per_problem": config.selection.budget,
        "menu": [dataclasses.asdict(step) for step in steps],
        "tried": tried,
        "chosen": chosen,
        "chosen_run": str(source),
        "seconds": round(time.perf_counter() - start, 1),
    }
    run_dir = workdir / RUN_DIR
    _publish(source, final, run_dir)
    text = json.dumps(record, indent=1) + "\n"
    write_text(workdir / SELECTION_FILE, text)
    write_text(run_dir / SELECTION_FILE, text)
    print(f"selection for {config.data.domain}: {json.dumps(chosen) if chosen else 'the defaults'}")
    return run_dir


def _searched_alike(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The settings whose search may be the same as these, nearest first: these without some of the
    `SEARCH_ALIKE` steps they take."""
    taken = [k for k, v in SEARCH_ALIKE.items() if k in settings and settings[k] == v]
    return [
        {k: v for k, v in settings.items() if k not in left_out}
        for size in range(1, len(taken) + 1)
        for left_out in itertools.combinations(taken, size)
    ]


def _eval_dir(run_dir: pathlib.Path, split: str, settings: Mapping[str, Any]) -> pathlib.Path:
    return run_dir / "eval" / f"{split}-{_label(settings, DECODE_FIELDS)}"


def _results(run_dir: pathlib.Path, split: str, settings: Mapping[str, Any]) -> list[dict]:
    return json.loads((_eval_dir(run_dir, split, settings) / "results.json").read_text(encoding="utf-8"))


def _derived(
    config: ml_collections.ConfigDict, settings: Mapping[str, Any], base: Mapping[str, Any], results: list[dict]
) -> list[dict] | None:
    """The results of a search with `settings`, from those of the search with `base` (`_searched_alike`): None
    where the two searches may differ. Action elimination only shortens the plans a search found: each
    solved plan is shortened as decoding would have (`search/decoding.py`, without a time limit). Estimates
    kept below zero change a search only where it had one at or below zero."""
    ours, theirs = _with(config, settings).decode, _with(config, base).decode
    unclipped = theirs.clip_cost_to_go and not ours.clip_cost_to_go
    if unclipped and any(r.get("estimates_at_most_zero", 1) for r in results):  # no count (older records): 1
        return None
    if not ours.action_elimination or theirs.action_elimination:
        return results
    domain_file = layout.domain_file(config.data.pddl_root, config.data.domain)
    shortened = []
    for result in results:
        if result["solved"]:
            plan = eliminate_actions(load_task(domain_file, result["problem_file"]), result["plan"])
            result = {**result, "plan": plan, "plan_length": len(plan)}
        shortened.append(result)
    return shortened


def _decode(run_dir: pathlib.Path, split: str, out: pathlib.Path, processes: int, **decoding: Any) -> None:
    """Decode the selection problems, dealt into `processes` processes: the same records as in one, as each
    problem's search is its own."""
    if processes > 1:
        shards.evaluate_sharded(run_dir, split, processes, out_dir=out, **decoding)
    else:
        evaluation.evaluate(run_dir, split, out_dir=out, **decoding)


def _problem_names(config: ml_collections.ConfigDict, split: str) -> list[str]:
    return [p.name for p in layout.problem_files(config.data.pddl_root, config.data.domain, split)]


def _fitted_on(config: ml_collections.ConfigDict) -> dict[str, dict[str, list[str]]]:
    """Per training split, the problems fitted on (with an expert plan) and those left out (without)."""
    plans_dir, domain = pipeline.cache_dirs(config)[0], config.data.domain
    fitted, left_out = {}, {}
    for split in pipeline.TRAINING_SPLITS:
        solved = {
            r["problem"]
            for r in plan_generation.read_trajectories(datasets.trajectories_path(plans_dir, domain, split))
        }
        names = [pathlib.Path(name).stem for name in _problem_names(config, split)]
        fitted[split] = [name for name in names if name in solved]
        left_out[split] = [name for name in names if name not in solved]
    return {"fitted_on": fitted, "left_out_without_expert_plan": left_out}


def _publish(source: pathlib.Path, config: ml_collections.ConfigDict, run_dir: pathlib.Path) -> None:
    """The chosen run at `run_dir`: the candidate's files without its evaluations, with the chosen config
    (its decoding settings included) written last, as training writes it."""
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(source, run_dir, ignore=shutil.ignore_patterns("eval", train.CONFIG_FILE))
    stored = config_lib.read(source)
    for dotted in DECODE_FIELDS:
        section, name = dotted.split(".")
        stored[section][name] = config[section][name]
    write_text(run_dir / train.CONFIG_FILE, stored.to_json(indent=1) + "\n")


def train_configured(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> pathlib.Path:
    """What `launch/train.py` runs: selection and the chosen run for a config with a `selection` section
    (`config.recommended()`; returns `<workdir>/run`), else the config's one training (returns `workdir`)."""
    if "selection" in config:
        return select_and_train(config, workdir)
    pipeline.train_from_config(config, workdir)
    return pathlib.Path(workdir)


def train_domain(
    root: str | os.PathLike,
    domain: str,
    workdir: str | os.PathLike,
    config: ml_collections.ConfigDict | None = None,
) -> pathlib.Path:
    """Train the recommended method for one domain of a PDDL root (IPC layout or the paper's) from its
    training problems only; returns the run to plan with (`<workdir>/run`). `config`: default
    `config.recommended()` with its cache in `<workdir>/cache`."""
    if config is None:
        config = config_lib.recommended()
        config.data.cache_dir = str(pathlib.Path(workdir) / "cache")
    config = config.copy_and_resolve_references()
    config.data.pddl_root, config.data.domain = str(root), domain
    return select_and_train(config, workdir)
