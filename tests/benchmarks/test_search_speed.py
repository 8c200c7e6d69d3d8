"""benchmarks/search_speed.py: its records resume a run per problem, its median counts failures, and the run it
trains for a config with selection."""

import math
import pathlib
import statistics

import pytest
from absl.testing import flagsaver

from benchmarks import search_speed
from benchmarks.search_speed import SETS, Records, time_ratio
from statecentric_jax.errors import InputError

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_a_record_is_reused_only_for_the_same_planner_problem_limits_and_settings(tmp_path):
    domain, problem = tmp_path / "domain.pddl", tmp_path / "p01.pddl"
    domain.write_text("(define (domain d))")
    problem.write_text("(define (problem p) (:domain d))")
    limits = {"time_limit": 300.0, "memory_limit_mb": 8000}
    records = Records(tmp_path / "work", limits)
    key = records.key("ours", domain, problem, run="runs/blocks", decode={"time_limit": 300.0})
    records.add({"key": key, "planner": "ours", "problem": str(problem), "solved": True})
    with open(records.path, "a") as f:
        f.write('{"key": "torn')  # a killed run's last line
    again = Records(tmp_path / "work", limits)
    assert again.done[key]["solved"] is True and "date" in again.done[key]
    assert again.key("ours", domain, problem, run="runs/blocks", decode={"time_limit": 300.0}) == key
    assert again.key("ours", domain, problem, run="runs/other", decode={"time_limit": 300.0}) not in again.done
    assert again.key("lama_first", domain, problem) not in again.done
    assert (
        Records(tmp_path / "work", {**limits, "time_limit": 60.0}).key(
            "ours", domain, problem, run="runs/blocks", decode={"time_limit": 300.0}
        )
        not in again.done
    )
    problem.write_text("(define (problem p) (:domain d) (:objects a))")  # rewritten: planned again
    assert again.key("ours", domain, problem, run="runs/blocks", decode={"time_limit": 300.0}) not in again.done


def test_the_median_counts_a_failure_of_ours_as_slower_than_any_time():
    solved = {"solved": True, "seconds": 2.0}
    failed = {"solved": False, "seconds": 300.0}
    lama = {"solved": True, "seconds": 0.5}
    assert time_ratio(solved, lama) == 4.0
    assert time_ratio(failed, lama) == math.inf
    assert time_ratio(solved, {"solved": False, "seconds": 300.0}) == 0.0
    assert math.isnan(time_ratio(failed, {"solved": False, "seconds": 300.0}))
    assert statistics.median([4.0, math.inf, math.inf]) == math.inf


def test_the_own_large_set_holds_every_larger_problem_of_the_four_domains():
    counts = {domain: len(entries) for domain, entries in SETS["own-large"].items()}
    assert counts == {"blocks": 64, "gripper": 14, "visitall": 12, "logistics": 30}
    assert all(split != "medium" for entries in SETS["own-large"].values() for split, _ in entries)


def test_a_config_with_selection_is_selected_per_domain_into_run_and_runs_of_two_kinds_do_not_mix(
    tmp_path, monkeypatch
):
    calls = []
    monkeypatch.setattr(search_speed.selection, "train_domain", lambda *args: calls.append(("selection", *args)))
    monkeypatch.setattr(search_speed.pipeline, "train_from_config", lambda *args: calls.append(("one run", *args)))
    flags = dict(pddl_root=str(REPO / "data" / "domains"), seed="7", run="", ipc_root="")  # as parsed
    with flagsaver.as_parsed(workdir=str(tmp_path / "a"), config=str(REPO / "configs" / "recommended.py"), **flags):
        run = search_speed.trained_run("blocks")
    ((kind, root, domain, workdir, config),) = calls
    assert (kind, root, domain) == ("selection", flags["pddl_root"], "blocks")
    assert workdir == tmp_path / "a" / "runs" / "blocks"
    assert run == str(workdir / "run") and config.seed == 7
    with flagsaver.as_parsed(workdir=str(tmp_path / "b"), config=str(REPO / "configs" / "{domain}_best.py"), **flags):
        run = search_speed.trained_run("blocks")
        (kind, config, workdir) = calls[-1]
        assert kind == "one run" and run == str(workdir) and config.data.domain == "blocks" and config.seed == 7
        (workdir / "config.json").parent.mkdir(parents=True)
        (workdir / "config.json").write_text("{}")
    recommended_there = flagsaver.as_parsed(
        workdir=str(tmp_path / "b"), config=str(REPO / "configs" / "recommended.py"), **flags
    )
    with recommended_there, pytest.raises(InputError, match="holds a run trained without selection"):
        search_speed.trained_run("blocks")
