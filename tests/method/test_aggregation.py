"""Expert data aggregation on a tiny Blocksworld root: rounds add planner trajectories and retrain, the
planner never sees a test problem, a killed run resumes without redoing finished rounds, rounds=0 is today."""

import json
import pathlib

import numpy as np
import pytest

from statecentric_jax import config as config_lib
from statecentric_jax.errors import InputError
from statecentric_jax.learning import train
from statecentric_jax.learning.value import ENCODER_FILE as VALUE_ENCODER_FILE
from statecentric_jax.learning.value import GOAL_PATHS_FILE as VALUE_GOAL_PATHS_FILE
from statecentric_jax.learning.value import VALUE_FILE
from statecentric_jax.method import aggregation, evaluation, pipeline
from statecentric_jax.method import config as method_config
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.successors import SuccessorGenerator
from statecentric_jax.planning.tasks import _section, load_task, read_sexpr
from statecentric_jax.problems import fast_downward, generators
from statecentric_jax.problems.plan_generation import read_trajectories
from statecentric_jax.search import decoding

REPO = pathlib.Path(__file__).resolve().parents[2]
SIZES = {"train": [3, 4, 4, 5], "validation": [6, 7], "test-extrapolation": [6, 7]}  # larger validation: mistakes


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("pddl")
    base = root / "blocks"
    for split, sizes in SIZES.items():
        (base / split).mkdir(parents=True)
        for i, n in enumerate(sizes):
            seed = i + 10 * list(SIZES).index(split)
            (base / split / f"{split}-b{n}-{i}.pddl").write_text(generators.blocks(n, seed=seed, name=f"b{n}-{i}"))
    (base / "domain.pddl").write_text((REPO / "data/domains/blocks/domain.pddl").read_text())
    return root


@pytest.fixture(scope="module")
def gripper_root(tmp_path_factory):
    """Gripper has many optimal plans per problem (which gripper, which ball first)."""
    root = tmp_path_factory.mktemp("gripper")
    base = root / "gripper"
    for split, sizes in {"train": [2, 3], "validation": [3]}.items():
        (base / split).mkdir(parents=True)
        for n in sizes:
            (base / split / f"{split}-g{n}.pddl").write_text(generators.gripper(n, name=f"g{n}"))
    (base / "domain.pddl").write_text((REPO / "data/domains/gripper/domain.pddl").read_text())
    return root


def make_config(root, cache, rounds, domain="blocks"):
    config = config_lib.table1(domain, "wl", "xgb", "delta")
    config.data.pddl_root = str(root)
    config.data.cache_dir = str(cache)
    config.xgb.rounds = 4
    config.aggregation.rounds = rounds
    config.aggregation.max_planner_calls = 20
    config.data.jobs = 1  # in this process, where the tests' recorders see every call
    return pipeline.resolved(config)


def goal_of(problem_file):
    return str(_section(read_sexpr(str(problem_file)), ":goal"))


class Planner:
    """Records every Fast Downward call and runs it (or stops the process, like a kill, after `stop_after`)."""

    def __init__(self, monkeypatch, stop_after=None):
        self.real, self.calls, self.stop_after = fast_downward.solve, [], stop_after
        monkeypatch.setattr(fast_downward, "solve", self)

    def __call__(self, domain_file, problem_file, *args, **kwargs):
        if self.stop_after is not None and len(self.aggregated()) >= self.stop_after:
            raise KeyboardInterrupt
        self.calls.append(pathlib.Path(problem_file))
        return self.real(domain_file, problem_file, *args, **kwargs)

    def aggregated(self):
        return [p for p in self.calls if aggregation.AGGREGATION_DIR in p.parts]


class Trainings:
    """Records each training's number of train + validation trajectories (or fails it, like a kill)."""

    def __init__(self, monkeypatch, fail=False):
        self.real, self.sizes, self.fail = train.train_models, [], fail
        monkeypatch.setattr(train, "train_models", self)  # train_model and run_experiment both train through it

    def __call__(self, config, train_split, validation, encoder, workdirs, value_data=None):
        if self.fail:
            raise KeyboardInterrupt
        self.sizes.append(len(train_split.trajectories) + len(validation.trajectories))
        return self.real(config, train_split, validation, encoder, workdirs, value_data)


def test_a_round_adds_planner_trajectories_and_retrains_never_planning_for_test_problems(root, tmp_path, monkeypatch):
    planner, trainings = Planner(monkeypatch), Trainings(monkeypatch)
    config = make_config(root, tmp_path / "cache", rounds=1)
    rates = pipeline.run_experiment(config, tmp_path / "run", seeds=[13], splits=["validation", "test-extrapolation"])
    assert set(rates) == {"validation", "test-extrapolation"}
    workdir = tmp_path / "run/seed13"

    (stats,) = json.loads((workdir / aggregation.SUMMARY_FILE).read_text())["rounds"]
    extra = sum(stats["extra_trajectories"].values())
    assert stats["planner_calls"] == len(planner.aggregated()) > 0 and stats["deviations"] > 0 and extra > 0
    assert trainings.sizes == [6, 6 + extra]  # the base model, then the model retrained with the new data

    trajectories = read_trajectories(workdir / "aggregation/round1/trajectories.jsonl")  # plan_generation's format
    assert len(trajectories) == extra
    for t in trajectories:  # optimal plans from a visited state of a train or validation problem
        task = load_task(t["domain_file"], t["problem_file"])
        assert simulate(task, t["plan"])[-1] == frozenset(t["states"][-1])
        assert t["split"] in ("train", "validation") and t["step"] > 0

    test_goals = {goal_of(p) for p in (root / "blocks/test-extrapolation").glob("*.pddl")}
    assert planner.calls and not any(goal_of(p) in test_goals for p in planner.calls)
    assert all(p.parent.name in ("train", "validation") for p in planner.calls if p not in planner.aggregated())


def test_retrain_value_refits_only_the_cost_to_go(root, tmp_path, monkeypatch):
    trainings = Trainings(monkeypatch)
    config = make_config(root, tmp_path / "cache", rounds=0)
    config.value.kind = "ridge"
    pipeline.train_from_config(config, tmp_path / "base")
    config.aggregation.rounds, config.aggregation.retrain = 1, "value"
    pipeline.train_from_config(config, tmp_path / "run")
    assert trainings.sizes == [6, 6]  # the transition model is trained once per run, never by a round

    def checkpoint(directory):
        return {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()}

    run, base = tmp_path / "run", tmp_path / "base"
    summary = json.loads((run / aggregation.SUMMARY_FILE).read_text())
    assert sum(summary["rounds"][0]["extra_trajectories"].values()) > 0
    assert checkpoint(run / train.CHECKPOINT_DIR) == checkpoint(base / train.CHECKPOINT_DIR)
    assert (run / VALUE_FILE).read_bytes() != (base / VALUE_FILE).read_bytes()

    del summary["config"]["aggregation"]["retrain"]  # a summary written before the choice existed still resumes
    (run / aggregation.SUMMARY_FILE).write_text(json.dumps(summary))
    config.aggregation.retrain = "all"
    assert not aggregation.pending(config, run)


def test_other_optimal_plans_leave_the_expert_path_at_optimal_cost(gripper_root, tmp_path, monkeypatch):
    planner, trainings = Planner(monkeypatch), Trainings(monkeypatch)
    config = make_config(gripper_root, tmp_path / "cache", rounds=0, domain="gripper")
    config.aggregation.alternative_plans = 2
    workdir = tmp_path / "run"
    pipeline.train_from_config(config, workdir)

    (stats,) = json.loads((workdir / aggregation.SUMMARY_FILE).read_text())["rounds"]
    extra = sum(stats["extra_trajectories"].values())
    assert stats["round"] == 0 and stats["planner_calls"] == len(planner.aggregated()) > 0 and extra > 0
    assert trainings.sizes == [3, 3 + extra]
    assert all(p.name.startswith(("train-", "validation-")) for p in planner.aggregated())

    plans_dir = pipeline.cache_dirs(config)[0] / "gripper"
    experts = {
        (split, r["problem"]): r
        for split in ("train", "validation")
        for r in read_trajectories(plans_dir / split / "trajectories.jsonl")
    }
    per_problem: dict[str, int] = {}
    for t in read_trajectories(workdir / "aggregation/round0/trajectories.jsonl"):
        expert = experts[(t["split"], pathlib.Path(t["source_file"]).stem)]
        step = t["step"]
        assert t["states"][0] == expert["states"][step] and t["states"][1] != expert["states"][step + 1]
        assert len(t["plan"]) == len(expert["plan"]) - step  # as short as the expert's: optimal too
        task = load_task(t["domain_file"], t["source_file"])
        assert simulate(task, expert["plan"][:step] + t["plan"])[-1] == frozenset(t["states"][-1])  # reaches the goal
        per_problem[t["source_file"]] = per_problem.get(t["source_file"], 0) + 1
    assert sorted(per_problem.values()) == [2, 2, 2]  # each problem has more than one optimal plan

    planner.calls.clear()
    assert not aggregation.pending(config, workdir)
    config.aggregation.rounds = 1  # a round of aggregation goes on from round 0, which is kept
    pipeline.aggregate(config, workdir)
    rounds = json.loads((workdir / aggregation.SUMMARY_FILE).read_text())["rounds"]
    assert [r["round"] for r in rounds] == [0, 1] and rounds[0] == stats
    assert all("round1" in p.parts for p in planner.calls)


def test_random_walk_states_leave_the_expert_path_get_optimal_plans_and_are_the_same_every_run(
    root, tmp_path, monkeypatch
):
    planner = Planner(monkeypatch)
    config = make_config(root, tmp_path / "cache", rounds=0)
    config.value.kind, config.aggregation.retrain = "ridge", "value"
    config.aggregation.random_walks, config.aggregation.walk_steps, config.aggregation.max_planner_calls = 3, 4, 100
    workdir = tmp_path / "run"
    pipeline.train_from_config(config, workdir)

    (stats,) = json.loads((workdir / aggregation.SUMMARY_FILE).read_text())["rounds"]
    walks = read_trajectories(workdir / "aggregation/round0/trajectories.jsonl")
    assert stats["round"] == 0 and 0 < len(walks) == sum(stats["extra_trajectories"].values())
    assert 0 < stats["planner_calls"] == len(planner.aggregated()) <= 3 * 6  # at most one call per walk
    assert all(p.name.startswith(("train-", "validation-")) for p in planner.aggregated())

    plans_dir = pipeline.cache_dirs(config)[0] / "blocks"
    experts = {
        (split, r["problem"]): [frozenset(s) for s in r["states"]]
        for split in ("train", "validation")
        for r in read_trajectories(plans_dir / split / "trajectories.jsonl")
    }
    for t in walks:
        expert = experts[(t["split"], pathlib.Path(t["source_file"]).stem)]
        start = frozenset(t["states"][0])
        assert start not in expert
        task = load_task(t["domain_file"], t["source_file"])
        successors = SuccessorGenerator(task)
        reached, frontier = {expert[t["step"]]}, {expert[t["step"]]}
        for _ in range(4):  # walk_steps
            frontier = {child for state in frontier for _, child in successors.successors(state)}
            reached |= frontier
        assert start in reached
        assert task.goal_reached(frozenset(t["states"][-1])) and len(t["plan"]) == len(t["states"]) - 1

    pipeline.train_from_config(config, tmp_path / "again")
    assert (tmp_path / "again/aggregation/round0/trajectories.jsonl").read_text() == (
        workdir / "aggregation/round0/trajectories.jsonl"
    ).read_text().replace(str(workdir), str(tmp_path / "again"))


def test_an_own_embedding_fitted_on_the_aggregated_states_collects_their_colours(root, tmp_path):
    def config_with(vocabulary):
        config = make_config(root, tmp_path / "cache", rounds=0)
        config.value.kind, config.aggregation.retrain = "ridge", "value"
        config.value.embedding, config.value.wl_iterations, config.value.wl_vocabulary = "own", 3, vocabulary
        config.aggregation.random_walks, config.aggregation.max_planner_calls = 4, 100
        return config

    for vocabulary in ("plans", "fitted"):
        pipeline.train_from_config(config_with(vocabulary), tmp_path / vocabulary)
    records = read_trajectories(tmp_path / "fitted/aggregation/round0/trajectories.jsonl")
    tasks = {r["source_file"]: load_task(r["domain_file"], r["source_file"]) for r in records}
    pairs = [(tasks[r["source_file"]], frozenset(state)) for r in records for state in r["states"]]
    plans, fitted = (train.load_model(tmp_path / v).cost_to_go.encoder for v in ("plans", "fitted"))
    assert fitted.dim > plans.dim  # states off the expert plans show colours the plans do not
    assert plans.embed_with_unseen(pairs)[1] > 0 and fitted.embed_with_unseen(pairs)[1] == 0

    config = config_with("all")
    with pytest.raises(InputError, match="value.wl_vocabulary='all' is not one of plans, fitted"):
        config_lib.check(config)


def test_test_splits_are_refused_before_any_planning():
    config = config_lib.best("blocks")
    config.aggregation.rounds = 1
    for split in ("test-extrapolation", "train,test-interpolation"):
        config.aggregation.splits = split
        with pytest.raises(InputError, match="never a test split"):
            config_lib.check(config)
        with pytest.raises(InputError, match="never a test split"):
            aggregation.run(config, "unused", {}, None, "unused")  # type: ignore[arg-type]
    for split in ("test-interpolation", "test-extrapolation"):
        with pytest.raises(ValueError, match="never plans for"):
            aggregation._guard(split)  # checked again at every planner call


@pytest.mark.parametrize(
    "algorithm,graph,iterations,cached",
    [("wl", "ilg", 3, "value-wl3-set"), ("lwl2", "ploig", 1, "value-wl1-set-lwl2-ploig")],
)
def test_a_cost_to_go_with_its_own_embedding_is_refitted_on_it(root, tmp_path, algorithm, graph, iterations, cached):
    config = make_config(root, tmp_path / "cache", rounds=1)
    config.value.kind, config.aggregation.retrain = "ridge", "value"
    config.value.embedding, config.value.wl_iterations = "own", iterations
    config.value.wl_algorithm, config.value.wl_graph = algorithm, graph
    config.decode.strategy = "best_first"
    run = tmp_path / "run"
    pipeline.train_from_config(config, run)

    loaded = train.load_model(run)
    own = loaded.cost_to_go.encoder
    assert own is not None and (run / VALUE_ENCODER_FILE).is_file()
    assert any((tmp_path / "cache/datasets").glob(f"*/blocks/{cached}/encoder.json"))
    assert (own.settings.algorithm, own.settings.graph) == (algorithm, graph)  # saved and read back with them
    assert own.dim != loaded.encoder.dim and loaded.cost_to_go.weights.shape == (2 * own.dim,)
    summary = json.loads((run / aggregation.SUMMARY_FILE).read_text())
    assert sum(summary["rounds"][0]["extra_trajectories"].values()) > 0  # the refit saw them, own-embedded

    # Decoding reads the cost-to-go's own φ of each new state, not the transition model's.
    task = load_task(root / "blocks/domain.pddl", sorted((root / "blocks/validation").glob("*.pddl"))[0])
    children = [state for _, state in SuccessorGenerator(task).successors(task.init)]
    pairs, parents = [(task, state) for state in children], [task.init] * len(children)
    features = loaded.cost_to_go.embed(pairs, parents, loaded.encoder.embed(pairs, parents))
    assert np.array_equal(features, own.embed(pairs))
    expected = np.maximum(features @ loaded.cost_to_go.weights[: own.dim] + loaded.cost_to_go.bias, 0)
    np.testing.assert_allclose(loaded.cost_to_go.estimate(features, np.ones_like(features)), expected, rtol=1e-5)
    result = evaluation.evaluate(run, "validation")
    assert result["problems"] == 2
    explored = evaluation.evaluate(run, "validation", exploration="novelty", out_dir=tmp_path / "novelty")
    assert (result["exploration"], explored["exploration"]) == ("none", "novelty")
    assert explored["fingerprint"] != result["fingerprint"]  # other settings: decoded again, never reused


@pytest.mark.parametrize("embedding,vocabulary", [("model", "plans"), ("own", "fitted")])
def test_goal_paths_beside_the_cost_to_go_phi_are_refitted_saved_and_read_in_decoding(
    root, tmp_path, embedding, vocabulary
):
    config = make_config(root, tmp_path / "cache", rounds=1)
    config.value.kind, config.aggregation.retrain, config.decode.strategy = "ridge", "value", "best_first"
    config.value.embedding, config.value.wl_iterations, config.value.wl_vocabulary = embedding, 2, vocabulary
    config.value.goal_paths = 2
    run = tmp_path / "run"
    pipeline.train_from_config(config, run)

    loaded = train.load_model(run)
    cost_to_go = loaded.cost_to_go
    paths = cost_to_go.goal_paths
    assert paths is not None and paths.length == 2 and (run / VALUE_GOAL_PATHS_FILE).is_file()
    assert (cost_to_go.encoder is None) == (embedding == "model")
    phi = cost_to_go.encoder or loaded.encoder
    assert paths.dim > 1 and cost_to_go.weights.shape == (2 * (phi.dim + paths.dim),)
    assert cost_to_go.weights[phi.dim : phi.dim + paths.dim].any()  # the fit reads the goal paths
    summary = json.loads((run / aggregation.SUMMARY_FILE).read_text())
    assert sum(summary["rounds"][0]["extra_trajectories"].values()) > 0

    # Decoding reads [φ(s), goal paths(s)] of each new state, and estimates from those alone.
    task = load_task(root / "blocks/domain.pddl", sorted((root / "blocks/validation").glob("*.pddl"))[0])
    children = [state for _, state in SuccessorGenerator(task).successors(task.init)]
    pairs, parents = [(task, state) for state in children], [task.init] * len(children)
    features = cost_to_go.embed(pairs, parents, loaded.encoder.embed(pairs, parents))
    assert np.array_equal(features, np.hstack([phi.embed(pairs), paths.embed(pairs)]))
    width = phi.dim + paths.dim
    expected = np.maximum(features @ cost_to_go.weights[:width] + cost_to_go.bias, 0)
    np.testing.assert_allclose(cost_to_go.estimate(features, np.ones_like(features)), expected, rtol=1e-5)
    assert evaluation.evaluate(run, "validation")["problems"] == 2

    (run / VALUE_GOAL_PATHS_FILE).write_text("{}")
    with pytest.raises(InputError, match="corrupt goal-path encoder file"):
        train.load_model(run)


@pytest.mark.parametrize(
    "key,value,reason",
    [
        ("rounds", -1, "integer >= 0"),
        ("max_planner_calls", 0, "integer >= 1"),
        ("time_limit", 0.0, "> 0 seconds"),
        ("retrain", "model", "not one of all, value"),
        ("retrain", "value", "refits the cost-to-go: set value.kind"),
        ("alternative_plans", -1, "integer >= 0"),
        ("random_walks", -1, "integer >= 0"),
        ("walk_steps", 0, "integer >= 1"),
        ("budget", -1, "integer >= 0"),
    ],
)
def test_bad_settings_are_one_line(key, value, reason):
    config = config_lib.base()
    config.aggregation.rounds = 1
    config.aggregation[key] = value
    with pytest.raises(InputError, match=f"aggregation.{key}=.*{reason}"):
        config_lib.check(config)


def test_runs_that_differ_in_what_they_train_plan_the_same_random_walk_states_once(root, tmp_path, monkeypatch):
    planner = Planner(monkeypatch)
    config = make_config(root, tmp_path / "cache", rounds=0)
    config.value.kind, config.aggregation.retrain = "ridge", "value"
    config.aggregation.random_walks, config.aggregation.max_planner_calls = 3, 100
    pipeline.train_from_config(config, tmp_path / "first")
    calls = len(planner.aggregated())
    assert calls > 0

    def collected(workdir, capped=False):
        stats = json.loads((workdir / "aggregation/round0/collected.json").read_text())
        stats.pop("collect_seconds")
        text = (workdir / "aggregation/round0/trajectories.jsonl").read_text().replace(str(workdir), "<run>")
        return stats, text

    other = config.copy_and_resolve_references()
    other.value.goal_paths = 2  # another cost-to-go, the same labelled random walks
    pipeline.train_from_config(other, tmp_path / "second")
    assert len(planner.aggregated()) == calls  # read from the shared records, not planned again
    assert collected(tmp_path / "second") == collected(tmp_path / "first")

    capped = other.copy_and_resolve_references()
    capped.aggregation.max_planner_calls = 2  # fewer calls: the first ones, all planned before
    pipeline.train_from_config(capped, tmp_path / "third")
    stats, _ = collected(tmp_path / "third")
    assert len(planner.aggregated()) == calls and stats["planner_calls"] == 2


@pytest.mark.parametrize("cap", [5, 100])
def test_planner_calls_and_decodings_made_several_at_a_time_make_the_rounds_of_one_at_a_time(root, tmp_path, cap):
    def rounds(jobs):
        config = make_config(root, tmp_path / f"cache-{jobs}", rounds=1)
        config.value.kind, config.aggregation.retrain = "ridge", "value"
        config.aggregation.random_walks, config.aggregation.max_planner_calls = 3, cap
        config.decode.strategy, config.aggregation.budget = "best_first", 300
        config.data.jobs = jobs
        workdir = tmp_path / f"jobs-{jobs}"
        pipeline.train_from_config(config, workdir)
        made = []
        for folder in sorted((workdir / aggregation.AGGREGATION_DIR).glob("round*")):
            stats = json.loads((folder / "collected.json").read_text())
            for timing in ("collect_seconds", "planner_seconds"):
                stats.pop(timing)
            calls = sorted(path.name for path in (folder / "calls").glob("*.json"))
            made.append((stats, calls, (folder / "trajectories.jsonl").read_text().replace(str(workdir), "<run>")))
        return made

    one_at_a_time = rounds(1)
    (walks, walk_calls, _), (deviations, _, _) = one_at_a_time
    assert walks["planner_calls"] == len(walk_calls) and (cap == 100 or len(walk_calls) == 5)
    assert deviations["decoded"] and deviations["planner_calls"]
    assert rounds(2) == one_at_a_time  # with cap 5, the cut falls inside a problem's walks


def test_resume_does_not_redo_finished_work(root, tmp_path, monkeypatch):
    config1, config2 = (make_config(root, tmp_path / "cache", rounds) for rounds in (1, 2))
    workdir = tmp_path / "run"
    with monkeypatch.context() as m:  # killed during round 1's planner calls
        planner = Planner(m, stop_after=2)
        with pytest.raises(KeyboardInterrupt):
            pipeline.train_from_config(config2, workdir)
    assert len(planner.aggregated()) == 2 and not (workdir / aggregation.SUMMARY_FILE).exists()

    with monkeypatch.context() as m:  # killed while retraining after round 1's calls
        planner, _ = Planner(m), Trainings(m, fail=True)
        with pytest.raises(KeyboardInterrupt):
            pipeline.aggregate(config2, workdir)
    collected = json.loads((workdir / "aggregation/round1/collected.json").read_text())
    assert len(planner.aggregated()) == collected["planner_calls"] - 2 > 0  # the first two were not asked again

    with monkeypatch.context() as m:  # round 1 only retrains
        planner, trainings = Planner(m), Trainings(m)
        pipeline.aggregate(config1, workdir)
    assert planner.calls == [] and len(trainings.sizes) == 1
    (round1,) = json.loads((workdir / aggregation.SUMMARY_FILE).read_text())["rounds"]

    with monkeypatch.context() as m:  # round 2 on top of the finished round 1
        planner, trainings = Planner(m), Trainings(m)
        pipeline.aggregate(config2, workdir)
    assert len(trainings.sizes) == 1 and all("round2" in p.parts for p in planner.calls)
    rounds = json.loads((workdir / aggregation.SUMMARY_FILE).read_text())["rounds"]
    assert [r["round"] for r in rounds] == [1, 2] and rounds[0] == round1

    with monkeypatch.context() as m:  # finished: nothing to do; trained again from scratch: only retrains
        planner, trainings = Planner(m), Trainings(m)
        assert not aggregation.pending(config2, workdir)
        pipeline.aggregate(config2, workdir)
        assert trainings.sizes == []
        splits, encoder = pipeline.prepare_data(config2)
        train.train_model(config2, splits["train"], splits["validation"], encoder, workdir)
        assert aggregation.pending(config2, workdir)
        pipeline.aggregate(config2, workdir)
    assert planner.aggregated() == [] and len(trainings.sizes) == 2 and trainings.sizes[1] > trainings.sizes[0]
    assert not aggregation.pending(config2, workdir)


def test_zero_rounds_train_exactly_as_before(root, tmp_path):
    config = make_config(root, tmp_path / "cache", rounds=0)
    pipeline.train_from_config(config, tmp_path / "pipeline")
    splits, encoder = pipeline.prepare_data(config)
    train.train_model(config, splits["train"], splits["validation"], encoder, tmp_path / "direct")

    def files(directory):  # training.json also records the wall time: compared without it
        found = {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}
        how = json.loads(found.pop(train.TRAINING_FILE))
        del how["seconds"]
        return found, how

    assert files(tmp_path / "pipeline") == files(tmp_path / "direct")
    assert not (tmp_path / "pipeline" / aggregation.SUMMARY_FILE).exists()
    assert not (tmp_path / "pipeline" / aggregation.AGGREGATION_DIR).exists()
    old = json.loads(config.to_json())
    del old["aggregation"]  # a run trained before aggregation existed
    assert config_lib.with_defaults(old)["aggregation"]["rounds"] == 0


def test_rounds_read_the_path_searched_not_the_plan_shortened_after(root, tmp_path, monkeypatch):
    """With action elimination configured, aggregation still decodes without it: deviations are found on the
    learned policy's own path, and the run's evaluations shorten their plans. A round's budget is its own."""
    seen = []

    def recording_decode(tasks, model, encoder, settings, *args, **kwargs):
        seen.append((settings.action_elimination, settings.budget))
        return decoding.decode(tasks, model, encoder, settings, *args, **kwargs)

    monkeypatch.setattr(aggregation, "decode", recording_decode)
    config = make_config(root, tmp_path / "cache", rounds=1)
    config.decode.action_elimination = True
    config.decode.strategy, config.decode.budget, config.aggregation.budget = "best_first", 5_000, 300
    pipeline.run_experiment(config, tmp_path / "run", seeds=[13], splits=["validation"])
    assert seen and not any(elimination for elimination, _ in seen)
    assert {budget for _, budget in seen} == {300}
    assert json.loads((tmp_path / "run/seed13/eval/validation/summary.json").read_text())["action_elimination"]


def test_another_configuration_starts_over_from_the_first_model(root, tmp_path, monkeypatch):
    """Another configuration's rounds retrained the workdir's model; starting over decodes its first round
    with the first training's model again. Where the cache is, how many processes fill it and how the PDDL
    root is spelled are no other configuration."""
    decoded_with = []  # the model digest each round decodes with
    real = aggregation._decode_splits

    def spy(config, workdir, plans_dir):
        decoded_with.append(aggregation._model_digest(workdir))
        return real(config, workdir, plans_dir)

    monkeypatch.setattr(aggregation, "_decode_splits", spy)
    config = make_config(root, tmp_path / "cache", rounds=1)
    config.value.kind, config.aggregation.retrain = "ridge", "value"
    other = config.copy_and_resolve_references()
    other.aggregation.max_planner_calls = 3
    pipeline.train_from_config(other, tmp_path / "run")
    retrained = aggregation._model_digest(tmp_path / "run")
    pipeline.aggregate(config, tmp_path / "run")
    assert decoded_with[0] != retrained and decoded_with == [decoded_with[0]] * 2

    (tmp_path / "linked").symlink_to(root)
    moved = config.copy_and_resolve_references()
    moved.data.pddl_root, moved.data.cache_dir = str(tmp_path / "linked"), str(tmp_path / "elsewhere")
    moved.data.jobs = 2
    assert not aggregation.pending(moved, tmp_path / "run")
    with_menu = config.copy_and_resolve_references()  # a selection menu only chooses among trained runs
    with_menu.selection = method_config.selection()
    assert not aggregation.pending(with_menu, tmp_path / "run")
