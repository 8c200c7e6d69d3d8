"""Beyond the paper: search strategies and a learned cost-to-go on validation and larger problems.

    python -m benchmarks.generalization --pddl_root=<paper splits>

For each domain it trains (once, cached in --workdir) the paper's WL-XGB delta transition
model together with a ridge cost-to-go, writes its own larger problems (about twice the
extrapolation sizes, seeded, under `<workdir>/large-problems`; `--splits=medium`: Logistics at
its extrapolation sizes; `--splits=large-more`: Blocks at the large sizes with other seeds;
`--splits=held-out`: more problems of the large sizes, kept out of every selection to confirm it
once; `held-out-2`: more Blocks and Logistics ones, `held-out-3`: more Blocks and Logistics ones,
`held-out-4`: more Logistics ones, for later selections), and decodes the paper's validation split
and those problems with each candidate search setting. It prints one table per
domain: success, mean plan length, decode time relative to the paper's beam on the same problems
(with the first model listed), and the numbers of the problems left unsolved. The `goal agenda:`
candidates decode one more goal per stage (`decode.goal_agenda=1`, `search/agenda.py`), a symbolic
decomposition reported beside the searches on the whole goal. `--action_elimination` adds, after
each candidate but the paper's beam, the same search with the steps its plans do not need dropped
(`decode.action_elimination`, `planning/elimination.py`: symbolic post-processing), its own row.

`--aggregation_rounds=0,1,2` adds the same model after that many rounds of expert data
aggregation (`method/aggregation.py`, decoding best-first on the train and validation
problems), with each round's planner calls; `--aggregation_retrain=value` refits only the
cost-to-go in those rounds; `--alternative_plans=k` gives every model up to k other optimal plans per
train/validation problem first (aggregation round 0), `--random_walks=k` up to k states off the expert plans,
labelled with optimal plans (the same round). `--value_goal_paths=k` puts goal paths of at most k edges
beside the cost-to-go's φ (`config.value.goal_paths`, `embedding/goal_paths.py`).
`--within_budgets=40000,80000` also counts, after each best-first row, the problems it solved within
each smaller budget. `--ensemble_members=lstm:state` adds that model averaged with the members
(`config.ensemble.members`, trained beside it with the same data and seed).

Settings are selected on these tables only; the paper's test splits are never decoded here
(`--splits` refuses them), nor planned for.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil

from absl import flags

from benchmarks.common import decode_split, print_columns, print_header, refuse_test_splits
from benchmarks.own_problems import OWN_PROBLEMS, write_own_problems
from statecentric_jax import config as config_lib
from statecentric_jax.atomic import write_text
from statecentric_jax.cli import parse_floats, parse_ints, run_main
from statecentric_jax.embedding.encoders import WL_ALGORITHMS, WL_GRAPHS
from statecentric_jax.errors import InputError
from statecentric_jax.learning import config as learning_config
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.learning.train import CONFIG_FILE
from statecentric_jax.method import aggregation, pipeline
from statecentric_jax.problems import fast_downward
from statecentric_jax.search.base import EXPLORATIONS, decode_config
from statecentric_jax.search.expander import DecodeStats

_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root with the training and validation splits.")
_DOMAINS = flags.DEFINE_list("domains", ["blocks", "gripper", "logistics", "visitall"], "Domains.")
_SPLITS = flags.DEFINE_list(
    "splits",
    ["validation", "large"],
    "validation (of --pddl_root) and/or our own: large, large-more (Blocks), medium (Logistics),"
    " held-out, held-out-2 (Blocks, Logistics), held-out-3 (Blocks, Logistics), held-out-4 (Logistics)"
    " (only to confirm a selection).",
)
_WORKDIR = flags.DEFINE_string("workdir", "runs/generalization", "Models and generated problems (reused).")
_BUDGET = flags.DEFINE_integer("budget", 10_000, "Node expansions per problem for the non-beam strategies.")
_CANDIDATES = flags.DEFINE_list("candidates", None, "Candidate names to run, comma-separated (default: all).")
_VALUE_WEIGHTS = flags.DEFINE_list(
    "value_weights", [], "More candidates: best-first on cost-to-go + w x distance for each w, e.g. 0.5,2."
)
_VALUE_EXPLORATIONS = flags.DEFINE_multi_enum(
    "value_weight_explorations", ["none"], list(EXPLORATIONS), "Each --value_weights candidate with these queues."
)
_VALUE_ALPHA = flags.DEFINE_float("value_alpha", 10.0, "Ridge strength of the cost-to-go.")
_PATH_WEIGHT = flags.DEFINE_float(
    "path_weight", 0.0, "Best-first with the cost-to-go: + this x plan length so far (decode.path_weight)."
)
_VALUE_FEATURES = flags.DEFINE_enum("value_features", "state", ["state", "state_goal"], "Cost-to-go features.")
_VALUE_EMBEDDING = flags.DEFINE_enum(
    "value_embedding", "model", ["model", "own"], "The cost-to-go's φ: the transition model's, or its own WL."
)
_VALUE_WL_ITERATIONS = flags.DEFINE_integer("value_wl_iterations", 4, "WL iterations of an own φ.")
_VALUE_WL_HASH = flags.DEFINE_enum("value_wl_hash", "set", ["set", "multiset"], "WL hash of an own φ.")
_VALUE_WL_ALGORITHM = flags.DEFINE_enum(
    "value_wl_algorithm", "wl", list(WL_ALGORITHMS), "wlplan algorithm of an own φ."
)
_VALUE_WL_VOCABULARY = flags.DEFINE_enum(
    "value_wl_vocabulary", "plans", list(learning_config.WL_VOCABULARIES), "Colours of an own φ (value.wl_vocabulary)."
)
_VALUE_WL_GRAPH = flags.DEFINE_enum("value_wl_graph", "ilg", list(WL_GRAPHS), "wlplan graph of an own φ.")
_VALUE_GOAL_PATHS = flags.DEFINE_integer(
    "value_goal_paths", 0, "Goal paths of at most this many edges beside the cost-to-go's φ (0: none)."
)
_REFERENCE_PLANS = flags.DEFINE_string(
    "reference_plans", None, "A generate_plans workdir with Fast Downward plans for these problems (plan-length ratio)."
)
_AGGREGATION = flags.DEFINE_list(
    "aggregation_rounds", ["0"], "Rounds of expert data aggregation to compare, e.g. 0,1,2 (a model per value)."
)
_ENSEMBLE = flags.DEFINE_string(
    "ensemble_members", "", "Also the model in an ensemble with these (config.ensemble.members), e.g. lstm:state."
)
_PLANNER_CALLS = flags.DEFINE_integer("max_planner_calls", 200, "Fast Downward calls per aggregation round.")
_ALTERNATIVES = flags.DEFINE_integer(
    "alternative_plans", 0, "Other optimal plans per train/validation problem (config aggregation.alternative_plans)."
)
_RANDOM_WALKS = flags.DEFINE_integer(
    "random_walks", 0, "Labelled random-walk states per train/validation problem (config aggregation.random_walks)."
)
_WALK_STEPS = flags.DEFINE_integer("walk_steps", 10, "Longest random walk (config aggregation.walk_steps).")
_ACTION_ELIMINATION = flags.DEFINE_bool(
    "action_elimination", False, "Also each candidate but the paper's beam with decode.action_elimination."
)
_TIME_BREAKDOWN = flags.DEFINE_bool(
    "time_breakdown", False, "After each row, where its decoding time went (search/expander.py's DecodeStats)."
)
_WITHIN_BUDGETS = flags.DEFINE_list(
    "within_budgets",
    [],
    "Smaller budgets, e.g. 40000,80000: after each best-first row, the problems it solved within each (a best-first"
    " search is the same with any budget it does not run out of, so one run answers for every smaller budget).",
)
_RETRAIN = flags.DEFINE_enum(
    "aggregation_retrain", "all", ["all", "value"], "What each aggregation round refits (config aggregation.retrain)."
)


@dataclasses.dataclass(frozen=True)
class Candidate:
    name: str
    strategy: str
    priority: str = "cumulative"
    value_weight: float = 0.0
    guided: bool = False  # uses the learned cost-to-go
    exploration: str = "none"  # every other expansion from a second queue (decode.exploration)
    goal_agenda: int = 0  # decode in stages with this many more goals each (decode.goal_agenda)
    action_elimination: bool = False  # solved plans lose the steps they do not need (decode.action_elimination)


COLUMNS = (
    "setting",
    "solved",
    "mean plan length",
    "length vs FD (FD plans)",
    "decode s",
    "time vs beam",
    "unsolved",
)


def guided(value_weight: float, exploration: str = "none") -> Candidate:
    name = f"best-first: cost-to-go + {value_weight:g} x distance"
    if exploration != "none":
        name += f" + {exploration} exploration"
    return Candidate(name, "best_first", value_weight=value_weight, guided=True, exploration=exploration)


CANDIDATES = (
    Candidate("beam (paper)", "beam"),
    Candidate("beam + backtracking", "beam_backtrack"),
    Candidate("beam restarts", "restarts"),
    Candidate("best-first: summed distance", "best_first"),
    Candidate("best-first: last distance", "best_first", priority="last"),
    Candidate("best-first: cost-to-go (distance breaks ties)", "best_first", guided=True),
    Candidate("best-first: cost-to-go + 1.0 x distance", "best_first", value_weight=1.0, guided=True),
    *(
        Candidate(
            f"best-first: cost-to-go{weight} + {exploration} exploration",
            "best_first",
            value_weight=w,
            guided=True,
            exploration=exploration,
        )
        for exploration in EXPLORATIONS
        if exploration != "none"
        for weight, w in ((" (distance breaks ties)", 0.0), (" + 1.0 x distance", 1.0))
    ),
    # a symbolic decomposition (search/agenda.py): one more goal per stage, in the task relevant to it
    Candidate("goal agenda: beam (paper)", "beam", goal_agenda=1),
    Candidate("goal agenda: best-first: summed distance", "best_first", goal_agenda=1),
    Candidate("goal agenda: best-first: cost-to-go (distance breaks ties)", "best_first", guided=True, goal_agenda=1),
)


def with_action_elimination(candidates: list[Candidate]) -> list[Candidate]:
    """Each candidate followed by itself with action elimination, but the paper's beam: the time reference."""
    twins = []
    for candidate in candidates:
        twins.append(candidate)
        if candidate != CANDIDATES[0]:
            twins.append(
                dataclasses.replace(candidate, name=f"{candidate.name} + action elimination", action_elimination=True)
            )
    return twins


def train(
    domain: str, workdir: pathlib.Path, rounds: int = 0, members: str = "", alternatives: int = 0, walks: int = 0
) -> pathlib.Path:
    """The WL-XGB delta transition model with a ridge cost-to-go, trained once; with `rounds`, that
    model after as many rounds of expert data aggregation (decoding best-first), continuing the
    run with one round less; with `alternatives`, that many other optimal plans per problem first
    (round 0), and with `walks` as many labelled random-walk states; with `members`, that model in an
    ensemble with them."""
    name = f"model-{_VALUE_FEATURES.value}-alpha{_VALUE_ALPHA.value:g}"
    if _VALUE_EMBEDDING.value == "own":
        name += f"-own-wl{_VALUE_WL_ITERATIONS.value}-{_VALUE_WL_HASH.value}"
        if (_VALUE_WL_ALGORITHM.value, _VALUE_WL_GRAPH.value) != ("wl", "ilg"):
            name += f"-{_VALUE_WL_ALGORITHM.value}-{_VALUE_WL_GRAPH.value}"
        if _VALUE_WL_VOCABULARY.value != "plans":
            name += f"-vocabulary-{_VALUE_WL_VOCABULARY.value}"
    if _VALUE_GOAL_PATHS.value:
        name += f"-paths{_VALUE_GOAL_PATHS.value}"
    if members:
        name += "-ensemble-" + "+".join(s.strip().replace(":", "_") for s in members.split(","))
    if rounds or alternatives or walks:
        name += f"-aggregation{rounds}-calls{_PLANNER_CALLS.value}" + ("-value" if _RETRAIN.value == "value" else "")
    if alternatives:
        name += f"-alternatives{alternatives}"
    if walks:
        name += f"-walks{walks}-steps{_WALK_STEPS.value}"
    run = workdir / domain / name
    config = config_lib.table1(domain, "wl", "xgb", "delta")
    config.data.pddl_root = _PDDL_ROOT.value
    config.data.cache_dir = str(workdir / "cache")
    config.xgb.n_jobs = 1  # one thread: a busy core cannot stall prediction, and timings compare fairly
    config.value.kind = "ridge"
    config.value.alpha = _VALUE_ALPHA.value
    config.value.features = _VALUE_FEATURES.value
    config.value.embedding = _VALUE_EMBEDDING.value
    config.value.wl_iterations = _VALUE_WL_ITERATIONS.value
    config.value.wl_multiset_hash = _VALUE_WL_HASH.value == "multiset"
    config.value.wl_algorithm = _VALUE_WL_ALGORITHM.value
    config.value.wl_graph = _VALUE_WL_GRAPH.value
    config.value.wl_vocabulary = _VALUE_WL_VOCABULARY.value
    config.value.goal_paths = _VALUE_GOAL_PATHS.value
    config.ensemble.members = members
    if rounds == 0 and alternatives == 0 and walks == 0:
        if (run / CONFIG_FILE).exists():
            pipeline.build_ensembles(pipeline.resolved(config), {config.seed: run})  # what a killed run lacks
        else:
            pipeline.train_from_config(config, run)
        return run
    config.decode.strategy = "best_first"
    config.aggregation.rounds = rounds
    config.aggregation.max_planner_calls = _PLANNER_CALLS.value
    config.aggregation.retrain = _RETRAIN.value
    config.aggregation.alternative_plans = alternatives
    config.aggregation.random_walks = walks
    config.aggregation.walk_steps = _WALK_STEPS.value
    if not run.exists():  # go on from the run with one round less (its finished rounds are kept)
        shutil.copytree(
            train(domain, workdir, rounds - 1, alternatives=alternatives, walks=walks)
            if rounds
            else train(domain, workdir),
            run,
        )
    config = pipeline.resolved(config)
    pipeline.aggregate(config, run)
    write_text(run / CONFIG_FILE, config.to_json(indent=1) + "\n")  # the copy's config said no aggregation
    return run


def aggregation_line(run: pathlib.Path) -> str:
    """Per round: extra trajectories, Fast Downward calls and seconds (from the run's aggregation.json)."""
    rounds = json.loads((run / aggregation.SUMMARY_FILE).read_text())["rounds"]
    return "; ".join(
        f"round {r['round']}: {sum(r['extra_trajectories'].values())} extra trajectories"
        f" ({r['extra_states']} states), {r['planner_calls']} planner calls ({r['planner_seconds']:.0f} s),"
        f" {r['deviations']} deviations, {r['collect_seconds'] + r['retrain_seconds']:.0f} s"
        for r in rounds
    )


def reference_lengths(plans_dir: str | None, domain: str, split: str) -> dict[str, tuple[int, bool]]:
    """Problem name -> (Fast Downward plan length, whether A* with LM-cut proved it optimal)."""
    if plans_dir is None:
        return {}
    records = (json.loads(p.read_text()) for p in (pathlib.Path(plans_dir) / domain / split / "records").glob("*.json"))
    return {
        r["problem"]: (len(r["plan"]), r["config"] == fast_downward.ASTAR_LMCUT)
        for r in records
        if r["status"] == "solved"
    }


def evaluate(
    run: pathlib.Path, root: str, domain: str, split: str, candidate: Candidate, reference: dict[str, tuple[int, bool]]
) -> dict:
    loaded = load_run(run)
    settings = decode_config(
        loaded.config,
        strategy=candidate.strategy,
        budget=_BUDGET.value,
        priority=candidate.priority,
        value_weight=candidate.value_weight,
        path_weight=_PATH_WEIGHT.value,
        exploration=candidate.exploration,
        goal_agenda=candidate.goal_agenda,
        action_elimination=candidate.action_elimination,
    )
    cost_to_go = loaded.cost_to_go if candidate.guided else None
    stats = DecodeStats()
    checked, seconds = decode_split(loaded, root, domain, split, settings, cost_to_go, stats)
    solved = [r for r in checked if r.solved]
    stems = [pathlib.Path(r.problem_file).stem for r in solved]
    compared = [(len(r.plan), *reference[stem]) for r, stem in zip(solved, stems) if stem in reference]
    return {
        "problems": len(checked),
        "solved": len(solved),
        "mean_length": sum(len(r.plan) for r in solved) / len(solved) if solved else float("nan"),
        "length_ratio": sum(ours / theirs for ours, theirs, _ in compared) / len(compared) if compared else None,
        "reference": f"{sum(optimal for *_, optimal in compared)}/{len(compared)} optimal",
        "seconds": seconds,
        "expansions": [r.steps for r in solved],  # best-first expands one node per step
        "unsolved": " ".join(pathlib.Path(r.problem_file).stem.rsplit("-", 1)[-1] for r in checked if not r.solved),
        "stats": stats,
    }


def main(argv):
    del argv
    refuse_test_splits("--splits", _SPLITS.value)
    within = parse_ints("within_budgets", _WITHIN_BUDGETS.value)
    if any(not 0 < b < _BUDGET.value for b in within):
        raise InputError(None, f"--within_budgets must lie between 0 and --budget ({_BUDGET.value}): {within}")
    print_header()
    workdir = pathlib.Path(_WORKDIR.value)
    own_root = workdir / "large-problems"  # our own problems, every split of them
    candidates = [c for c in CANDIDATES if _CANDIDATES.value is None or c.name in _CANDIDATES.value]
    candidates += [
        guided(w, exploration)
        for w in parse_floats("value_weights", _VALUE_WEIGHTS.value)
        for exploration in _VALUE_EXPLORATIONS.value
    ]
    if _ACTION_ELIMINATION.value:
        candidates = with_action_elimination(candidates)
    for domain in _DOMAINS.value:
        for split in set(_SPLITS.value) & set(OWN_PROBLEMS):
            write_own_problems(own_root, domain, split)
        runs = {}  # row suffix -> run; "" is the model alone
        alternatives = _ALTERNATIVES.value
        for rounds in parse_ints("aggregation_rounds", _AGGREGATION.value):
            suffix = (f" + aggregation x{rounds}" if rounds else "") + (
                f" + {alternatives} other optimal plans" if alternatives else ""
            )
            suffix += f" + {_RANDOM_WALKS.value} random-walk states" if _RANDOM_WALKS.value else ""
            runs[suffix] = run = train(domain, workdir, rounds, alternatives=alternatives, walks=_RANDOM_WALKS.value)
            if rounds or alternatives or _RANDOM_WALKS.value:
                print(f"\n{domain}{suffix}: {aggregation_line(run)}")
        if _ENSEMBLE.value:
            runs[f" + ensemble with {_ENSEMBLE.value}"] = train(domain, workdir, members=_ENSEMBLE.value)
        for split in _SPLITS.value:
            root = str(own_root) if split in OWN_PROBLEMS else _PDDL_ROOT.value
            print(f"\n{domain} / {split}")
            reference = reference_lengths(_REFERENCE_PLANS.value, domain, split)
            print_columns(COLUMNS)
            beam_seconds = None
            for suffix, run in runs.items():
                for candidate in candidates:
                    row = evaluate(run, root, domain, split, candidate, reference)
                    if candidate.strategy == "beam" and not candidate.goal_agenda and beam_seconds is None:
                        beam_seconds = row["seconds"]  # the paper's decoder, with the first model listed
                    ratio = f"{row['seconds'] / beam_seconds:.1f}x" if beam_seconds else "n/a"
                    versus = f"{row['length_ratio']:.2f}x ({row['reference']})" if row["length_ratio"] else "n/a"
                    name = candidate.name + suffix
                    print(
                        f"| {name} | {row['solved']}/{row['problems']} | {row['mean_length']:.1f} "
                        f"| {versus} | {row['seconds']:.1f} | {ratio} | {row['unsolved'] or '-'} |",
                        flush=True,
                    )
                    if within and candidate.strategy == "best_first":
                        counts = ", ".join(f"{sum(e <= b for e in row['expansions'])} within {b:,}" for b in within)
                        print(f"  solved {counts} expansions", flush=True)
                    if _TIME_BREAKDOWN.value:
                        spent = ", ".join(f"{k} {v:.1f} s" for k, v in dataclasses.asdict(row["stats"]).items())
                        print(f"  time of the row above: {spent} (the model in a thread of its own)", flush=True)


if __name__ == "__main__":
    run_main(main)
