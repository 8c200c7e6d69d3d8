"""A domain with dead ends: one-way roads, some of which lead where the goal is out of reach."""

ONE_WAY_DOMAIN = """(define (domain one-way)
  (:requirements :strips)
  (:predicates (at ?x) (road ?x ?y))
  (:action drive :parameters (?x ?y)
    :precondition (and (at ?x) (road ?x ?y))
    :effect (and (not (at ?x)) (at ?y))))
"""
ROADS = (("a", "x"), ("x", "goal"), ("a", "c"), ("c", "d"), ("d", "e"), ("e", "d"))  # c, d and e: dead ends


def one_way_problem(start: str) -> str:
    roads = " ".join(f"(road {x} {y})" for x, y in ROADS)
    return f"""(define (problem from-{start}) (:domain one-way)
  (:objects a c d e x goal)
  (:init (at {start}) {roads})
  (:goal (at goal)))
"""
