"""benchmarks/search_speed.py: its records resume a run per problem, and its median counts failures."""

import math
import statistics

from benchmarks.search_speed import SETS, Records, time_ratio


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
