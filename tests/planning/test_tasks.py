"""PDDL loading: grounding facts and one-line errors for bad input."""

import pytest

from statecentric_jax.errors import InputError
from statecentric_jax.planning.tasks import load_task
from tests.planning.guarded import NEGATIVE_DOMAIN, NEGATIVE_PROBLEM

DOMAIN = """(define (domain toy)
  (:requirements :strips :negative-preconditions)
  (:predicates (at ?x) (link ?x ?y) (done))
  (:action go :parameters (?x ?y)
    :precondition (and (at ?x) (link ?x ?y))
    :effect (and (not (at ?x)) (at ?y))))
"""
PROBLEM = """(define (problem p1) (:domain toy)
  (:objects a b c)
  (:init (at a) (link a b) (link b c))
  (:goal (and (at c))))
"""


def write(tmp_path, domain=DOMAIN, problem=PROBLEM):
    (tmp_path / "domain.pddl").write_text(domain)
    (tmp_path / "p.pddl").write_text(problem)
    return tmp_path / "domain.pddl", tmp_path / "p.pddl"


def test_loads_and_separates_static_atoms(tmp_path):
    task = load_task(*write(tmp_path))
    assert task.objects == ("a", "b", "c")
    assert task.static == {"(link a b)", "(link b c)"}
    assert task.init == {"(at a)"}
    assert [op.name for op in task.operators] == ["(go a b)", "(go b c)"]
    assert task.operator("( GO  A B )").add == {"(at b)"}


BAD_DOMAINS = {
    "malformed PDDL: 1 unclosed": DOMAIN[:-2],
    "conditional effects": DOMAIN.replace("(and (not (at ?x)) (at ?y))", "(when (at ?x) (at ?y))"),
    "negation of a compound condition": DOMAIN.replace("(link ?x ?y))", "(not (and (link ?x ?y))))"),
    "equality ('=') in effect": DOMAIN.replace("(at ?y))))", "(at ?y) (= ?x ?y))))"),
    "derived predicates": DOMAIN.replace("(:action", "(:derived (done) (at a))\n  (:action"),
    "numeric fluents": DOMAIN.replace("(:action", "(:functions (fuel))\n  (:action"),
    "unknown predicate 'lnk'": DOMAIN.replace("(link ?x ?y))", "(lnk ?x ?y))"),
    "unknown parameter '?z'": DOMAIN.replace("(at ?y))", "(at ?z))"),
}


@pytest.mark.parametrize("expected", sorted(BAD_DOMAINS))
def test_bad_domain_names_file_and_problem(tmp_path, expected):
    domain_file, problem_file = write(tmp_path, domain=BAD_DOMAINS[expected])
    with pytest.raises(InputError) as info:
        load_task(domain_file, problem_file)
    message = str(info.value)
    assert message.startswith(str(domain_file) + ": ")
    assert expected in message
    assert "\n" not in message


BAD_PROBLEMS = {
    "unknown object 'd'": PROBLEM.replace("(link b c)", "(link b d)"),
    "unknown predicate 'on'": PROBLEM.replace("(at c)", "(on c)"),
    "takes 2 arguments, got 1": PROBLEM.replace("(link a b)", "(link a)"),
    "numeric fluents": PROBLEM.replace("(at a)", "(at a) (= (fuel) 3)"),
    "negative goals": PROBLEM.replace("(and (at c))", "(and (not (at a)))"),
    "malformed PDDL: bad atom ((((((": PROBLEM.replace("(at a)", "(at a) " + "(" * 3000 + ")" * 3000),
    "problem is for domain 'other'": PROBLEM.replace("(:domain toy)", "(:domain other)"),
    "unexpected ')' on line 5": PROBLEM + ")",
}


@pytest.mark.parametrize("expected", sorted(BAD_PROBLEMS))
def test_bad_problem_names_file_and_problem(tmp_path, expected):
    domain_file, problem_file = write(tmp_path, problem=BAD_PROBLEMS[expected])
    with pytest.raises(InputError) as info:
        load_task(domain_file, problem_file)
    assert str(info.value).startswith(str(problem_file) + ": ")
    assert expected in str(info.value)


def test_missing_file(tmp_path):
    domain_file, _ = write(tmp_path)
    with pytest.raises(InputError, match="file not found"):
        load_task(domain_file, tmp_path / "nope.pddl")


GUARDED_OPERATORS = ["(block b)", "(block c)", "(go r b c)", "(go r b home)", "(go r home b)"]


def test_negative_preconditions_types_constants_and_equality(tmp_path):
    task = load_task(*write(tmp_path, NEGATIVE_DOMAIN, NEGATIVE_PROBLEM))
    assert task.objects == ("r", "b", "c", "home")
    assert task.static == {"(link home b)", "(link b c)", "(link c c)", "(link b home)"}
    # (go r c c) is ruled out by equality; (block home) by equality with a constant; robots are not places
    assert [op.name for op in task.operators] == GUARDED_OPERATORS
    go = task.operator("(go r home b)")
    assert go.pre == {"(at r home)"} and go.pre_neg == {"(blocked b)"}
    assert go.applicable(task.init) and not go.applicable(task.init | {"(blocked b)"})
    assert task.operator("(block b)").pre == frozenset()


def test_a_conjunction_nested_thousands_deep_loads_like_a_flat_one(tmp_path):
    flat = load_task(*write(tmp_path))
    nested = PROBLEM.replace("(and (at c))", "(and " * 3000 + "(at c)" + ")" * 3000)
    deep = load_task(*write(tmp_path, problem=nested))
    assert deep.goal == flat.goal == {"(at c)"}
    assert deep.operators == flat.operators


def test_translator_output_is_silenced(tmp_path, capfd):
    load_task(*write(tmp_path))
    assert capfd.readouterr() == ("", "")


def test_a_problem_may_declare_a_domain_constant_again(tmp_path):
    objects = "(:objects r - robot home - place b c - place)"
    task = load_task(
        *write(tmp_path, NEGATIVE_DOMAIN, NEGATIVE_PROBLEM.replace("(:objects r - robot b c - place)", objects))
    )
    assert task.objects == ("r", "home", "b", "c")
    assert [op.name for op in task.operators] == GUARDED_OPERATORS
