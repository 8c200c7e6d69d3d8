"""The IPC-layout benchmark on a tiny folder built from the bundled Blocks problems: LAMA-first and our planner
(a tiny config) side by side, plans re-checked, tables written, resumed per problem, limits and bad input."""

import csv
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.experiments import ipc
from statecentric_jax.planning.plans import read_plan, simulate
from statecentric_jax.planning.tasks import load_task

REPO = pathlib.Path(__file__).resolve().parents[2]
LEVELS = ["easy", "hard", "broken"]
TINY_CONFIG = """
from statecentric_jax import config as config_lib


def get_config():
    config = config_lib.table1("blocks", "wl", "xgb", "delta")
    config.xgb.rounds = 4
    config.xgb.n_jobs = 1
    config.value.kind = "ridge"
    config.decode.strategy = "best_first"
    config.decode.budget = 2000
    return config
"""

MENU_CONFIG = """
from statecentric_jax import config as config_lib


def get_config():
    config = config_lib.recommended()
    config.data.ipc_train, config.data.ipc_validation, config.data.ipc_selection = "1-4", "5-6", "7-8"
    config.selection.steps = "{steps}"
    config.selection.budget = 500
    config.decode.budget = {budget}
    return config
"""


def _ipc_folder(root: pathlib.Path, data_root: pathlib.Path) -> pathlib.Path:
    """blocks/{domain.pddl, training/easy/p01-p12, testing/{easy,hard}/p01-p02} from data/domains/blocks, and a
    level `broken` whose one problem does not parse."""
    source = data_root / "domains" / "blocks"
    (root / "blocks").mkdir(parents=True)
    shutil.copy(source / "domain.pddl", root / "blocks" / "domain.pddl")
    training = sorted((source / "train").glob("*.pddl")) + sorted((source / "validation").glob("*.pddl"))
    (root / "blocks" / "training" / "easy").mkdir(parents=True)
    for k, problem in enumerate(training, 1):
        shutil.copy(problem, root / "blocks" / "training" / "easy" / f"p{k:02d}.pddl")
    for level, split in (("easy", "test-interpolation"), ("hard", "test-extrapolation")):
        (root / "blocks" / "testing" / level).mkdir(parents=True)
        for k, problem in enumerate(sorted((source / split).glob("*.pddl"))[:2], 1):
            shutil.copy(problem, root / "blocks" / "testing" / level / f"p{k:02d}.pddl")
    (root / "blocks" / "testing" / "broken").mkdir()
    (root / "blocks" / "testing" / "broken" / "p01.pddl").write_text("(define (problem x) (:domain blocks) (:init")
    return root


@pytest.fixture(scope="module")
def bench(tmp_path_factory, data_root):
    base = tmp_path_factory.mktemp("ipc")
    root = _ipc_folder(base / "root", data_root)
    config = base / "tiny.py"
    config.write_text(TINY_CONFIG)
    workdir = base / "work"
    coverage = ipc.run(root, workdir, levels=LEVELS, planners=["lama_first", str(config)], time_limit=60, jobs=2)
    return root, config, workdir, coverage


def _rows(workdir: pathlib.Path) -> list[dict]:
    with open(workdir / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_results_and_plans(bench):
    root, _, workdir, coverage = bench
    rows = _rows(workdir)
    assert tuple(rows[0]) == ipc.RESULT_FIELDS
    assert {(r["planner"], r["level"], r["problem"]) for r in rows} == {
        (p, level, name)
        for p in ("lama_first", "tiny")
        for level, names in (("easy", ("p01", "p02")), ("hard", ("p01", "p02")), ("broken", ("p01",)))
        for name in names
    }
    assert coverage["lama_first"] == "4/5"
    assert {r["outcome"] for r in rows if r["level"] == "broken"} == {"error"}  # the batch went on
    assert (workdir / "tiny" / "blocks" / "run" / "config.json").is_file()  # trained once, for the domain
    training = json.loads((workdir / "tiny" / "blocks" / ipc.TRAINING_FILE).read_text())
    assert training["seconds"] > 0 and training["peak_mb"] > 0
    assert (workdir / "tiny" / "blocks" / ipc.TRAINING_LOG).stat().st_size > 0
    for row in rows:
        assert row["outcome"] in ipc.OUTCOMES
        assert row["level"] == "broken" or float(row["peak_mb"]) > 0
        plan_file = workdir / row["planner"] / "blocks" / row["level"] / f"{row['problem']}.plan"
        assert plan_file.is_file() == (row["solved"] == "True")
        if plan_file.is_file():
            task = load_task(
                root / "blocks" / "domain.pddl", root / "blocks" / "testing" / row["level"] / f"{row['problem']}.pddl"
            )
            plan = read_plan(plan_file)
            simulate(task, plan)  # raises if the plan is not valid
            assert int(row["plan_cost"]) == len(plan)
            assert float(row["reference_cost"]) <= len(plan)  # best cost of the run: no reference_costs.json
    coverage_md, quality_md = (workdir / "coverage.md").read_text(), (workdir / "quality.md").read_text()
    assert "| lama_first | 4/5 | 4/5 |" in coverage_md and "## Coverage, hard" in coverage_md
    assert f"| tiny | blocks | {training['seconds']:.0f} |" in coverage_md
    assert "best cost found in this run" in quality_md and "| lama_first |" in quality_md
    assert (workdir / "cumulative.png").read_bytes()[:4] == b"\x89PNG"


def test_resumes_per_problem(bench, monkeypatch):
    root, config, workdir, _ = bench
    records = (workdir / ipc.RECORDS_FILE).read_text().splitlines()
    planned: list[str] = []
    original = ipc.solve_one
    monkeypatch.setattr(ipc, "solve_one", lambda *args: planned.append(args[1].key) or original(*args))
    ipc.run(root, workdir, levels=LEVELS, planners=["lama_first", str(config)], time_limit=60)
    assert planned == []  # everything finished earlier
    kept = [r for r in records if not ('"lama_first"' in r and "hard/p02" in r)]
    (workdir / ipc.RECORDS_FILE).write_text("\n".join(kept) + "\n")
    ipc.run(root, workdir, levels=LEVELS, planners=["lama_first", str(config)], time_limit=60)
    assert planned == ["blocks/testing/hard/p02.pddl"]
    assert len((workdir / ipc.RECORDS_FILE).read_text().splitlines()) == len(records)
    ipc.run(root, workdir, levels=["easy"], problems="p01", planners=["lama_first", str(config)], time_limit=60)
    assert planned == ["blocks/testing/hard/p02.pddl"]  # a smaller selection: all finished
    assert len(_rows(workdir)) == 2  # the tables show the selection, the records keep the rest
    assert len((workdir / ipc.RECORDS_FILE).read_text().splitlines()) == len(records)
    ipc.run(root, workdir, levels=LEVELS, planners=["lama_first", str(config)], time_limit=60)  # tables as before


def test_replan_plans_a_planner_again_and_resumes(bench, monkeypatch):
    root, config, workdir, _ = bench
    records = len((workdir / ipc.RECORDS_FILE).read_text().splitlines())
    planned: list[str] = []
    original = ipc.solve_one

    def interrupted(*args):
        if planned:
            raise KeyboardInterrupt
        planned.append(args[1].key)
        return original(*args)

    monkeypatch.setattr(ipc, "solve_one", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ipc.run(
            root, workdir, levels=LEVELS, planners=["lama_first", str(config)], time_limit=60, replan=["lama_first"]
        )
    monkeypatch.setattr(ipc, "solve_one", lambda *args: planned.append(args[1].key) or original(*args))
    ipc.run(root, workdir, levels=LEVELS, planners=["lama_first", str(config)], time_limit=60)  # resumes the replanning
    lama_keys = sorted(
        f"{r['domain']}/testing/{r['level']}/{r['problem']}.pddl"
        for r in _rows(workdir)
        if r["planner"] == "lama_first"
    )
    assert sorted(planned) == lama_keys  # each of lama_first's problems once, none of the other planner's
    assert len((workdir / ipc.RECORDS_FILE).read_text().splitlines()) == records  # replaced, not added
    with pytest.raises(InputError, match="--replan"):
        ipc.run(root, workdir, levels=LEVELS, planners=["lama_first"], time_limit=60, replan=["gbfs_ff"])


def test_limits(bench, tmp_path):
    root, config, workdir, _ = bench
    problem = ipc.Problem("blocks", "hard", "p01", root / "blocks" / "testing" / "hard" / "p01.pddl")
    lama, tiny = ipc.resolve_planners(["lama_first", str(config)])
    run_dir = str(workdir / "tiny" / "blocks" / "run")
    for planner, limits, outcome in (
        (lama, ipc.Limits(0.01, 8192), "timeout"),
        (tiny, ipc.Limits(0.01, 8192), "timeout"),  # its clock starts after the model is loaded
        (lama, ipc.Limits(60, 1), "memory"),
    ):
        record = ipc.solve_one(planner, problem, limits, run_dir, str(tmp_path / "p01.plan"))
        assert (record["outcome"], record["solved"]) == (outcome, False)
        assert record["seconds"] < 10 and not (tmp_path / "p01.plan").exists()


@pytest.mark.parametrize("grounded", [False, True])
def test_a_kill_at_the_limit_says_whether_grounding_had_finished(bench, tmp_path, monkeypatch, grounded):
    root, config, workdir, _ = bench
    problem = ipc.Problem("blocks", "hard", "p01", root / "blocks" / "testing" / "hard" / "p01.pddl")
    (tiny,) = ipc.resolve_planners([str(config)])

    def killed(command, cwd, limits, *files):
        if grounded:
            (cwd / "grounded").write_text("0.5")
        return ipc.Finished(None, "timeout", 70.0, 1.0, 100.0, "")

    monkeypatch.setattr(ipc, "run_limited", killed)
    record = ipc.solve_one(tiny, problem, ipc.Limits(60, 8192), str(workdir / "tiny" / "blocks" / "run"), "p.plan")
    where = "searching" if grounded else "grounding"
    assert (record["outcome"], record["message"]) == ("timeout", f"no plan within 60 s, killed while {where}")


def test_our_search_is_bounded_by_the_limits_not_the_runs_node_budget(bench, tmp_path):
    root, config, workdir, _ = bench
    run_dir = tmp_path / "run"
    shutil.copytree(workdir / "tiny" / "blocks" / "run", run_dir)
    stored = json.loads((run_dir / "config.json").read_text())
    stored["decode"]["budget"] = 1
    (run_dir / "config.json").write_text(json.dumps(stored))
    problem = ipc.Problem("blocks", "easy", "p01", root / "blocks" / "testing" / "easy" / "p01.pddl")
    (tiny,) = ipc.resolve_planners([str(config)])
    record = ipc.solve_one(tiny, problem, ipc.Limits(60, 8192), str(run_dir), str(tmp_path / "p01.plan"))
    assert record["solved"] and record["expansions"] > 1


def test_a_menu_step_not_chosen_keeps_our_records_and_another_config_is_refused(bench, tmp_path, monkeypatch):
    root, workdir, config = bench[0], tmp_path / "work", tmp_path / "menu.py"
    config.write_text(MENU_CONFIG.format(steps="value_weight", budget=2000))
    ipc.run(root, workdir, levels=["easy"], planners=[str(config)], time_limit=60)
    rows = _rows(workdir)
    planned: list[str] = []
    original = ipc.solve_one
    monkeypatch.setattr(ipc, "solve_one", lambda *args: planned.append(args[1].key) or original(*args))
    config.write_text(MENU_CONFIG.format(steps="value_weight,dead_ends", budget=2000))  # Blocks has no dead ends
    ipc.run(root, workdir, levels=["easy"], planners=[str(config)], time_limit=60)
    chosen = json.loads((workdir / "menu" / "blocks" / "selection.json").read_text())
    assert [tried["step"] for tried in chosen["tried"]] == ["start", "value_weight", "dead_ends"]
    assert "decode.prune_dead_ends" not in chosen["chosen"]
    assert planned == [] and _rows(workdir) == rows  # chosen again alike: the same run, the same records
    config.write_text(MENU_CONFIG.format(steps="value_weight,dead_ends", budget=1999))
    ipc.run(root, workdir, levels=["easy"], planners=[str(config)], time_limit=60)
    errors = [record for record in ipc.read_records(workdir / ipc.RECORDS_FILE) if record["outcome"] == "error"]
    assert len(errors) == len(rows) and all("holds a run of another configuration" in r["message"] for r in errors)


@pytest.mark.parametrize(
    ("name", "default", "chosen"), [("estimate_helpful_only", False, True), ("preferred_boost", 0, 9)]
)
def test_a_planner_stored_before_a_setting_was_added_is_the_same_planner(bench, tmp_path, name, default, chosen):
    """A setting added to the config since planner.json was written means its default: the run is reused."""
    _, config, workdir, _ = bench
    base = tmp_path / "blocks"
    shutil.copytree(workdir / "tiny" / "blocks", base)
    (tiny,) = ipc.resolve_planners([str(config)])
    stored = json.loads((base / ipc.TRAINED_FILE).read_text())
    assert stored["decode"].pop(name) == default
    (base / ipc.TRAINED_FILE).write_text(json.dumps(stored))
    assert ipc._finished_training(tiny, base) == base / "run"
    stored["decode"][name] = chosen
    (base / ipc.TRAINED_FILE).write_text(json.dumps(stored))
    with pytest.raises(InputError, match="holds a run of another configuration"):
        ipc._finished_training(tiny, base)


def test_a_training_over_its_limit_fails_its_domain_only(bench, tmp_path):
    root, config, _, _ = bench
    workdir = tmp_path / "work"
    coverage = ipc.run(
        root,
        workdir,
        levels=["easy"],
        problems="p01",
        planners=["lama_first", str(config)],
        time_limit=60,
        training_memory_limit_mb=1,
    )
    assert coverage == {"lama_first": "1/1", "tiny": "0/1"}  # the baseline still planned
    (record,) = [r for r in ipc.read_records(workdir / ipc.RECORDS_FILE) if r["planner"] == "tiny"]
    assert (record["outcome"], record["message"]) == ("error", "training failed: killed above 1 MiB resident")
    assert not (workdir / "tiny" / "blocks" / "run" / "config.json").exists()


def test_a_planner_killed_from_outside_is_planned_again(bench, tmp_path, monkeypatch):
    root = bench[0]
    driver = tmp_path / "killed.py"
    driver.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")  # as the system's OOM killer
    monkeypatch.setattr(ipc.fast_downward, "driver_path", lambda: str(driver))
    problem = ipc.Problem("blocks", "easy", "p01", root / "blocks" / "testing" / "easy" / "p01.pddl")
    (lama,) = ipc.resolve_planners(["lama_first"])
    record = ipc.solve_one(lama, problem, ipc.Limits(60, 8192), None, str(tmp_path / "p01.plan"))
    assert (record["outcome"], record["retry"]) == ("error", True)
    assert record["message"].startswith("Fast Downward exit code -9")


def test_a_plan_val_rejects_is_invalid(bench, tmp_path, monkeypatch):
    root = bench[0]
    validate = tmp_path / "bin" / "Validate"
    validate.parent.mkdir()
    validate.write_text("#!/bin/sh\necho 'Plan failed to execute'\nexit 1\n")
    validate.chmod(0o755)
    monkeypatch.setenv("PATH", f"{validate.parent}:{os.environ['PATH']}")
    problem = ipc.Problem("blocks", "easy", "p01", root / "blocks" / "testing" / "easy" / "p01.pddl")
    (lama,) = ipc.resolve_planners(["lama_first"])
    record = ipc.solve_one(lama, problem, ipc.Limits(60, 8192), None, str(tmp_path / "p01.plan"))
    assert (record["outcome"], record["message"], record["solved"]) == ("invalid", "VAL rejected the plan", False)
    assert not (tmp_path / "p01.plan").exists()


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(problems="every=0"), "--problems"),
        (dict(problems="first"), "--problems"),
        (dict(problems="p99"), "selects no problem"),
        (dict(domains=["nosuch"]), "no domain 'nosuch'"),
        (dict(levels=["medium"]), "no level 'medium'"),
        (dict(planners=["astar"]), "--planners"),
        (dict(time_limit=0), "--time_limit"),
        (dict(training_time_limit=-1), "--training_time_limit"),
        (dict(training_memory_limit_mb=0), "--training_memory_limit_mb"),
    ],
)
def test_bad_input_is_refused_before_work(bench, tmp_path, arguments, message):
    root = bench[0]
    with pytest.raises(InputError, match=message):
        ipc.run(
            root, tmp_path / "work", **{"levels": LEVELS, "planners": ["lama_first"], "time_limit": 10, **arguments}
        )
    assert not (tmp_path / "work").exists()


def test_launcher_exit_code_2(tmp_path):
    command = [sys.executable, str(REPO / "launch" / "ipc.py"), f"--root={tmp_path / 'none'}", "--time_limit=5"]
    proc = subprocess.run([*command, f"--workdir={tmp_path / 'w'}"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: --root: {tmp_path / 'none'} is not a directory"]
