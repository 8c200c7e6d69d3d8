"""From a config to trained and evaluated runs: the steps every experiment shares.

Data products are cached below `config.data.cache_dir`, keyed by the PDDL root,
so that every configuration and seed of a domain reuses the same plans and
embedded datasets:

  <cache_dir>/plans/<root id>/<domain>/<split>/...        (plan_generation)
  <cache_dir>/datasets/<root id>/<domain>/<encoding>/...  (datasets)
  <cache_dir>/datasets/<root id>/<domain>/value-wl<k>-<multiset|set>[-<algorithm>-<graph>]/...  (a cost-to-go's own φ)

A root in the IPC layout is read through its training view below `<cache_dir>/views/` (`resolved`).

A run directory (`--workdir`) holds one seed per subfolder `seed<N>/` with the
model, its encoder and `eval/<split>/`; finished seeds and splits are skipped
when an experiment is run again. With `config.ensemble.members`, each seed also holds
`members/<kind>_<mode>/` (one trained run per member, same data and seed) and `ensemble.json`
(learning/ensemble.py), and is evaluated with the ensemble.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
from collections.abc import Mapping, Sequence

import ml_collections
from absl import logging

from statecentric_jax import config as config_lib
from statecentric_jax.atomic import exclusive_lock, write_text
from statecentric_jax.embedding import config as embedding_config
from statecentric_jax.embedding import datasets
from statecentric_jax.embedding.encoders import Encoder, WLSettings
from statecentric_jax.embedding.goal_paths import GoalPathEncoder
from statecentric_jax.errors import InputError
from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning import ensemble, train, value
from statecentric_jax.method import aggregation, evaluation
from statecentric_jax.problems import layout, plan_generation

TRAINING_SPLITS = ("train", "validation")
EVALUATION_SPLITS = ("validation", "test-interpolation", "test-extrapolation")
SEEDS = (13, 14, 15)
MEMBERS_DIR = "members"


def root_id(pddl_root: str | os.PathLike) -> str:
    """A readable, unique cache name for a PDDL root: its folder name plus a path hash."""
    path = os.path.abspath(pddl_root)
    return f"{os.path.basename(path.rstrip(os.sep)) or 'root'}-{hashlib.sha1(path.encode()).hexdigest()[:8]}"


def cache_dirs(config: ml_collections.ConfigDict) -> tuple[pathlib.Path, pathlib.Path]:
    """(plans dir, dataset dir) of a config's domain and encoding."""
    base = pathlib.Path(config.data.cache_dir)
    rid = root_id(config.data.pddl_root)
    return base / "plans" / rid, base / "datasets" / rid / config.data.domain / config.data.encoding


def prepare_data(config: ml_collections.ConfigDict) -> tuple[dict[str, datasets.EmbeddedSplit], Encoder]:
    """Plans (Fast Downward, cached) and embedded train/validation splits (cached)."""
    config_lib.check(config)  # fail before any work on a misspelt config
    config = resolved(config)
    plans_dir, dataset_dir = cache_dirs(config)
    summary = plan_generation.generate_plans(
        config.data.pddl_root,
        plans_dir,
        domains=[config.data.domain],
        splits=TRAINING_SPLITS,
        jobs=config.data.jobs or None,
        astar_time_limit=embedding_config.extra(config, "expert_astar_seconds"),
        gbfs_time_limit=embedding_config.extra(config, "expert_fallback_seconds"),
        fallback=embedding_config.extra(config, "expert_fallback"),
    )
    logging.info("plans: %s", summary.report().splitlines()[-1])
    if summary.failures and not (embedding_config.extra(config, "skip_unsolved") and not summary.split_failures):
        raise InputError(
            plans_dir, f"{len(summary.failures)} training problem(s) without a plan: {summary.failures[0]}"
        )
    for failure in summary.failures:
        logging.warning("left out, no expert plan: %s", failure)
    splits = datasets.build_dataset(
        config.data.pddl_root, plans_dir, config.data.domain, config.data.encoding, dataset_dir, TRAINING_SPLITS
    )
    return splits, datasets.load_dataset_encoder(dataset_dir)


def prepare_value_data(config: ml_collections.ConfigDict) -> value.ValueData | None:
    """The train/validation splits embedded as a cost-to-go with its own φ (cached) or with goal paths beside
    φ reads them; None for one that reads the transition model's splits. Call after `prepare_data`, which
    makes the plans (and the transition model's encoder)."""
    own, length = learning_config.own_value_embedding(config), learning_config.value_goal_paths(config)
    if not own and not length:
        return None
    config = resolved(config)
    plans_dir, phi_dir = cache_dirs(config)  # φ: the transition model's, unless its own
    if own:
        settings = WLSettings(
            iterations=config.value.wl_iterations,
            multiset_hash=config.value.wl_multiset_hash,
            algorithm=config.value.wl_algorithm,
            graph=config.value.wl_graph,
        )
        hashing = "multiset" if settings.multiset_hash else "set"
        graph = (settings.algorithm, settings.graph)
        variant = "" if graph == ("wl", "ilg") else f"-{settings.algorithm}-{settings.graph}"
        phi_dir = phi_dir.parent / f"value-wl{settings.iterations}-{hashing}{variant}"
        splits = datasets.build_dataset(
            config.data.pddl_root, plans_dir, config.data.domain, "wl", phi_dir, TRAINING_SPLITS, settings
        )
        if not length:
            return value.ValueData(splits["train"], splits["validation"], datasets.load_dataset_encoder(phi_dir), True)
    phi = datasets.load_dataset_encoder(phi_dir)
    domain = config.data.domain
    loaded = {s: datasets.load_split_tasks(config.data.pddl_root, plans_dir, domain, s) for s in TRAINING_SPLITS}
    goal_paths = GoalPathEncoder.fit(domain, loaded["train"], length)  # its vocabulary: the training states'
    features = value.features_encoder(phi, goal_paths)
    embedded = {s: datasets.embed_loaded(features, loaded[s], domain, features.kind, s) for s in TRAINING_SPLITS}
    return value.ValueData(embedded["train"], embedded["validation"], phi, own, goal_paths)


def resolved(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """A copy with absolute data paths, so the run it trains works from any working directory. A root in
    the IPC layout becomes its training view (`layout.training_view`, below the cache): from then on
    every step sees train/validation/selection splits and no test problem."""
    config = config.copy_and_resolve_references()
    config.data.pddl_root = os.path.abspath(config.data.pddl_root)
    config.data.cache_dir = os.path.abspath(config.data.cache_dir)
    if layout.is_ipc_layout(config.data.pddl_root, config.data.domain):
        picks = {split: embedding_config.extra(config, f"ipc_{split}") for split in layout.VIEW_SPLITS}
        views = pathlib.Path(config.data.cache_dir) / "views"
        config.data.pddl_root = str(layout.training_view(config.data.pddl_root, config.data.domain, picks, views))
    return config


def train_from_config(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> train.TrainResult:
    """Prepare the data and train one model into `workdir`."""
    config = resolved(config)
    splits, encoder = prepare_data(config)
    result = train.train_model(
        config, splits["train"], splits["validation"], encoder, workdir, prepare_value_data(config)
    )
    aggregate(config, workdir)
    build_ensembles(config, {config.seed: pathlib.Path(workdir)})
    return result


def aggregate(config: ml_collections.ConfigDict, workdir: str | os.PathLike) -> None:
    """The configured rounds of expert data aggregation on a trained run, resumed (none by default)."""
    if aggregation.pending(config, workdir):
        splits, encoder = prepare_data(config)
        aggregation.run(config, workdir, splits, encoder, cache_dirs(config)[0], prepare_value_data(config))


def build_ensembles(config: ml_collections.ConfigDict, seed_dirs: Mapping[int, pathlib.Path]) -> None:
    """Each seed's ensemble (`config.ensemble.members`), resumed: the members a seed lacks are trained,
    every seed of a member in one go, then `ensemble.json` names the seed's model and its members.
    Without members a seed has no `ensemble.json`: the config says whether a run is an ensemble."""
    members = learning_config.ensemble_members(config)
    if not members:
        for seed_dir in seed_dirs.values():
            (seed_dir / ensemble.ENSEMBLE_FILE).unlink(missing_ok=True)
        return
    data: tuple[dict[str, datasets.EmbeddedSplit], Encoder] | None = None  # prepared once, if needed
    for kind, mode in members:
        member = learning_config.ensemble_member(config, kind, mode)
        dirs = {seed: member_dir(seed_dir, kind, mode) for seed, seed_dir in seed_dirs.items()}
        todo = {seed: path for seed, path in dirs.items() if not _trained(member, seed, path)}
        if todo:
            splits, encoder = data = data or prepare_data(config)
            member = resolved(member)
            value_data = prepare_value_data(member)
            train.train_models(member, splits["train"], splits["validation"], encoder, todo, value_data)
    for seed_dir in seed_dirs.values():
        ensemble.write(seed_dir, [seed_dir, *(member_dir(seed_dir, kind, mode) for kind, mode in members)])


def member_dir(seed_dir: pathlib.Path, kind: str, mode: str) -> pathlib.Path:
    """Where a seed's ensemble member is trained."""
    return seed_dir / MEMBERS_DIR / f"{kind}_{mode}"


def _trained(config: ml_collections.ConfigDict, seed: int, seed_dir: pathlib.Path) -> bool:
    """Whether `seed_dir` holds a finished run of `config` with `seed`; refuses a run of another config."""
    if not (seed_dir / train.CONFIG_FILE).exists():  # written last: training finished
        return False
    if not config_lib.same_run(config_lib.read(seed_dir), _seed_config(config, seed)):
        raise InputError(seed_dir, "holds a run of another configuration; use a fresh --workdir")
    return True


def _seed_config(config, seed: int):
    seeded = resolved(config)
    seeded.seed = seed
    return seeded


def run_experiment(
    config: ml_collections.ConfigDict,
    workdir: str | os.PathLike,
    seeds: Sequence[int] = SEEDS,
    splits: Sequence[str] = EVALUATION_SPLITS,
) -> dict:
    """Train and evaluate one configuration for each seed; returns success rates per split and seed.
    One experiment at a time works in `workdir` (`.lock`): a second is refused in one line."""
    workdir = pathlib.Path(workdir)
    config_lib.check(config)  # a bad config makes no workdir
    with exclusive_lock(workdir, "an experiment"):
        return _run_experiment_locked(config, workdir, seeds, splits)


def _run_experiment_locked(
    config: ml_collections.ConfigDict, workdir: pathlib.Path, seeds: Sequence[int], splits: Sequence[str]
) -> dict:
    rates: dict[str, dict[str, float]] = {}
    todo = {}
    for seed in seeds:
        seed_dir = workdir / f"seed{seed}"
        if _trained(config, seed, seed_dir):
            logging.info("seed %d: trained model found in %s", seed, seed_dir)
        else:
            shutil.rmtree(seed_dir / "eval", ignore_errors=True)  # results of an older model
            todo[seed] = seed_dir
    if todo:  # all missing seeds in one go (LSTM: one vmapped program; XGBoost: trained once)
        data, encoder = prepare_data(config)
        value_data = prepare_value_data(config)
        train.train_models(resolved(config), data["train"], data["validation"], encoder, todo, value_data)
    for seed in seeds:
        seed_dir = workdir / f"seed{seed}"
        aggregate(_seed_config(config, seed), seed_dir)  # a run killed during aggregation goes on
    build_ensembles(config, {seed: workdir / f"seed{seed}" for seed in seeds})
    for index, seed in enumerate(seeds):
        seed_dir = workdir / f"seed{seed}"
        for split in splits:  # reuses the results of this model and settings, decodes what is missing
            earlier = [workdir / f"seed{s}" / "eval" / split / "results.jsonl" for s in seeds[:index]]
            summary = evaluation.evaluate(seed_dir, split, reuse=earlier)  # XGBoost: the seeds' model is one
            rates.setdefault(split, {})[str(seed)] = summary["success_rate"]
    write_text(workdir / "results.json", json.dumps(rates, indent=1) + "\n")
    return rates


def format_rates(rates: dict[str, dict[str, float]]) -> str:
    """A small success table: one row per split, one column per seed, then the mean."""
    seeds = sorted({seed for per_seed in rates.values() for seed in per_seed})
    lines = ["| split | " + " | ".join(f"seed {s}" for s in seeds) + " | mean |", "|---" * (len(seeds) + 2) + "|"]
    for split, per_seed in rates.items():
        values = [per_seed[s] for s in seeds if s in per_seed]
        lines.append(
            f"| {split} | "
            + " | ".join(f"{per_seed.get(s, float('nan')):.2f}" for s in seeds)
            + f" | {sum(values) / len(values):.2f} |"
        )
    return "\n".join(lines)
