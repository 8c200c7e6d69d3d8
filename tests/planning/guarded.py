"""A typed domain with negative preconditions, equality and a constant: a robot moves to places not blocked."""

NEGATIVE_DOMAIN = """(define (domain guarded)
  (:requirements :typing :negative-preconditions :equality)
  (:types place - object robot - object)
  (:constants home - place)
  (:predicates (at ?r - robot ?p - place) (blocked ?p - place) (link ?x ?y - place) (visited ?p - place))
  (:action go :parameters (?r - robot ?x ?y - place)
    :precondition (and (at ?r ?x) (link ?x ?y) (not (blocked ?y)) (not (= ?x ?y)))
    :effect (and (not (at ?r ?x)) (at ?r ?y) (visited ?y)))
  (:action block :parameters (?p - place)
    :precondition (and (not (blocked ?p)) (not (= ?p home)))
    :effect (blocked ?p)))
"""
NEGATIVE_PROBLEM = """(define (problem g1) (:domain guarded)
  (:objects r - robot b c - place)
  (:init (at r home) (link home b) (link b c) (link c c) (link b home))
  (:goal (and (visited c))))
"""
