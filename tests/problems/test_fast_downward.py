"""Fast Downward runs: solved, unsolvable, timed out, fallback, and bad input that FD never sees."""

import itertools
import os
import pathlib

import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import fast_downward
from statecentric_jax.problems.fast_downward import ASTAR_LMCUT, GBFS_FF
from tests.planning.guarded import NEGATIVE_DOMAIN, NEGATIVE_PROBLEM

BLOCKS = (pathlib.Path(__file__).resolve().parents[2] / "data/domains/blocks/domain.pddl").read_text()


def blocks_problem(name: str, tower: str, goal: str | None = None) -> str:
    """Blocks all on the table; the goal stacks `tower` ("abc": a on b on c) unless `goal` is given."""
    init = " ".join(f"(ontable {b}) (clear {b})" for b in sorted(tower))
    goal = goal or " ".join(f"(on {x} {y})" for x, y in itertools.pairwise(tower))
    return f"""(define (problem {name}) (:domain blocks)
  (:objects {" ".join(sorted(tower))})
  (:init (handempty) {init})
  (:goal (and {goal})))
"""


UNSOLVABLE = blocks_problem("cycle", "ab", goal="(on a b) (on b a)")

# case -> (domain text, problem text, the file named in the error, the reason)
BAD_INPUT = {
    "malformed": (BLOCKS[:-2], blocks_problem("p", "ab"), "domain", "malformed PDDL"),
    "unknown-predicate": (
        BLOCKS,
        blocks_problem("p", "ab", goal="(above a b)"),
        "problem",
        "unknown predicate 'above'",
    ),
    "unknown-object": (BLOCKS, blocks_problem("p", "ab", goal="(on a z)"), "problem", "unknown object 'z'"),
    "conditional-effect": (
        BLOCKS.replace(
            "(holding ?x)))\n\n  (:action put-down", "(when (clear ?x) (holding ?x))))\n\n  (:action put-down"
        ),
        blocks_problem("p", "ab"),
        "domain",
        "conditional effects",
    ),
    "derived-predicate": (
        BLOCKS.replace("  (:action pick-up", "  (:derived (holding ?x) (clear ?x))\n  (:action pick-up"),
        blocks_problem("p", "ab"),
        "domain",
        "derived predicates",
    ),
    "numeric-fluent": (
        BLOCKS.replace("  (:action pick-up", "  (:functions (moves))\n  (:action pick-up"),
        blocks_problem("p", "ab"),
        "domain",
        "numeric fluents",
    ),
    "negative-goal": (BLOCKS, blocks_problem("p", "ab", goal="(not (on a b))"), "problem", "negative goals"),
}


def write(folder, domain=BLOCKS, problem=None, name="p"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "domain.pddl").write_text(domain)
    (folder / f"{name}.pddl").write_text(problem or blocks_problem(name, "abc"))
    return folder / "domain.pddl", folder / f"{name}.pddl"


def test_driver_is_found_in_the_wheel():
    path = fast_downward.driver_path()
    assert path.endswith(os.path.join("up_fast_downward", "downward", "fast-downward.py"))
    assert os.path.isfile(path)


def test_astar_finds_an_optimal_plan_that_replays(tmp_path):
    domain_file, problem_file = write(tmp_path, problem=blocks_problem("p", "abc"))
    result = fast_downward.solve(domain_file, problem_file)
    assert (result.status, result.config, result.message) == ("solved", ASTAR_LMCUT, "")
    assert result.plan == ["(pick-up b)", "(stack b c)", "(pick-up a)", "(stack a b)"]
    assert [a.status for a in result.attempts] == ["solved"]
    states = simulate(load_task(domain_file, problem_file), result.plan)
    assert "(on a b)" in states[-1]


def test_unsolvable_is_proven_and_skips_the_fallback(tmp_path):
    domain_file, problem_file = write(tmp_path, problem=UNSOLVABLE)
    result = fast_downward.solve(domain_file, problem_file)
    assert result.status == "unsolvable"
    assert result.plan is None
    assert len(result.attempts) == 1
    assert result.message.startswith(f"{problem_file}: ") and "unsolvable" in result.message


def test_tiny_time_limits_time_out_in_both_configs(tmp_path):
    domain_file, problem_file = write(tmp_path)
    result = fast_downward.solve(domain_file, problem_file, fast_downward.default_configs(0.01, 0.01))
    assert result.status == "timeout"
    assert [(a.config, a.status) for a in result.attempts] == [(ASTAR_LMCUT, "timeout"), (GBFS_FF, "timeout")]
    assert result.message.startswith(f"{problem_file}: ") and "no plan within 0.01 s" in result.message
    assert "\n" not in result.message


@pytest.mark.parametrize("fallback", ["gbfs_ff", "lama_first"])
def test_falls_back_when_astar_times_out(tmp_path, fallback):
    domain_file, problem_file = write(tmp_path)
    astar, second = fast_downward.default_configs(0.01, 60, fallback)
    result = fast_downward.solve(domain_file, problem_file, (astar, second))
    assert (result.status, result.config) == ("solved", fast_downward.FALLBACKS[fallback])
    assert [a.status for a in result.attempts] == ["timeout", "solved"]
    simulate(load_task(domain_file, problem_file), result.plan)


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_a_one_line_error_and_never_reaches_the_planner(tmp_path, monkeypatch, case):
    monkeypatch.setattr(fast_downward, "_run", lambda *args: pytest.fail("the planner saw bad input"))
    domain_text, problem_text, culprit, reason = BAD_INPUT[case]
    files = dict(zip(("domain", "problem"), write(tmp_path, domain_text, problem_text)))
    result = fast_downward.solve(files["domain"], files["problem"])
    assert result.status == "error"
    assert result.message.startswith(f"{files[culprit]}: ")
    assert reason in result.message
    assert "\n" not in result.message


def test_missing_file_is_an_error(tmp_path):
    domain_file, _ = write(tmp_path)
    result = fast_downward.solve(domain_file, tmp_path / "absent.pddl")
    assert (result.status, result.message) == ("error", f"{tmp_path / 'absent.pddl'}: file not found")


def test_cpu_limit_signal_counts_as_timeout_and_falls_back(tmp_path, monkeypatch):
    # With a 1 s limit the driver's CPU limit can kill a component first: exit code 232 (-SIGXCPU).
    domain_file, problem_file = write(tmp_path)
    real_run = fast_downward._run
    calls = []

    def run(command, cwd, time_limit):
        calls.append(command[command.index("--search") + 1])
        return (232, "", "") if len(calls) == 1 else real_run(command, cwd, time_limit)

    monkeypatch.setattr(fast_downward, "_run", run)
    result = fast_downward.solve(domain_file, problem_file)
    assert [a.status for a in result.attempts] == ["timeout", "solved"]
    assert "SIGXCPU" in result.attempts[0].reason and calls == [ASTAR_LMCUT, GBFS_FF]


def test_planner_failure_quotes_the_planners_own_reason(tmp_path):
    domain_file = tmp_path / "domain.pddl"
    domain_file.write_text(
        (pathlib.Path(__file__).resolve().parents[2] / "data/domains/blocks/domain.pddl").read_text()
    )
    problem_file = tmp_path / "p.pddl"
    problem_file.write_text(
        "(define (problem p) (:domain blocks) (:objects a\u00e9 b)"
        " (:init (clear a\u00e9) (clear b) (ontable a\u00e9) (ontable b) (handempty)) (:goal (and (on a\u00e9 b))))",
        encoding="utf-8",
    )
    result = fast_downward.solve(domain_file, problem_file)
    assert result.status == "error"
    assert "Non-ASCII character outside comment" in result.message and "Planner time" not in result.message


def test_an_unknown_fallback_is_a_one_line_error():
    with pytest.raises(InputError, match="unknown planner fallback 'lama' \\(use gbfs_ff or lama_first\\)"):
        fast_downward.default_configs(fallback="lama")


def test_negative_preconditions_and_equality_are_solved_and_replay(tmp_path):
    (tmp_path / "guarded.pddl").write_text(NEGATIVE_DOMAIN)
    (tmp_path / "g.pddl").write_text(NEGATIVE_PROBLEM)
    result = fast_downward.solve(tmp_path / "guarded.pddl", tmp_path / "g.pddl")
    assert result.status == "solved" and result.plan == ["(go r home b)", "(go r b c)"]
    states = simulate(load_task(tmp_path / "guarded.pddl", tmp_path / "g.pddl"), result.plan)
    assert "(visited c)" in states[-1]
