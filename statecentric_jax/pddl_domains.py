"""The PDDL domain files of the four benchmark domains, kept as text.

Same predicates and action schemas as the paper's domain files (and the same
`(domain NAME)`, so the paper's problem files load with these domains too), so a
model trained on one problem set is usable on the other. Kept in code so that
`generators.write_dataset` can lay out a complete PDDL root anywhere.
"""

# The `(domain NAME)` each problem file must declare.
PDDL_NAMES = {"blocks": "blocks", "gripper": "gripper-strips", "logistics": "logistics", "visitall": "grid-visit-all"}

DOMAIN_PDDL = {
    "blocks": """\
; Blocksworld with one hand (IPC-2000, 4 operators): same predicates and
; action schemas as the paper's domain file.
(define (domain blocks)
  (:requirements :strips)
  (:predicates
    (on ?x ?y)
    (ontable ?x)
    (clear ?x)
    (handempty)
    (holding ?x))

  (:action pick-up
    :parameters (?x)
    :precondition (and (clear ?x) (ontable ?x) (handempty))
    :effect (and (not (ontable ?x)) (not (clear ?x)) (not (handempty))
                 (holding ?x)))

  (:action put-down
    :parameters (?x)
    :precondition (holding ?x)
    :effect (and (not (holding ?x)) (clear ?x) (handempty) (ontable ?x)))

  (:action stack
    :parameters (?x ?y)
    :precondition (and (holding ?x) (clear ?y))
    :effect (and (not (holding ?x)) (not (clear ?y)) (clear ?x) (handempty)
                 (on ?x ?y)))

  (:action unstack
    :parameters (?x ?y)
    :precondition (and (on ?x ?y) (clear ?x) (handempty))
    :effect (and (holding ?x) (clear ?y) (not (clear ?x)) (not (handempty))
                 (not (on ?x ?y)))))
""",
    "gripper": """\
; Gripper (IPC-1998): a robot with grippers carries balls between rooms.
; Same predicates and action schemas as the paper's domain file.
(define (domain gripper-strips)
  (:requirements :strips)
  (:predicates
    (room ?r)
    (ball ?b)
    (gripper ?g)
    (at-robby ?r)
    (at ?b ?r)
    (free ?g)
    (carry ?o ?g))

  (:action move
    :parameters (?from ?to)
    :precondition (and (room ?from) (room ?to) (at-robby ?from))
    :effect (and (at-robby ?to) (not (at-robby ?from))))

  (:action pick
    :parameters (?obj ?room ?gripper)
    :precondition (and (ball ?obj) (room ?room) (gripper ?gripper)
                       (at ?obj ?room) (at-robby ?room) (free ?gripper))
    :effect (and (carry ?obj ?gripper) (not (at ?obj ?room))
                 (not (free ?gripper))))

  (:action drop
    :parameters (?obj ?room ?gripper)
    :precondition (and (ball ?obj) (room ?room) (gripper ?gripper)
                       (carry ?obj ?gripper) (at-robby ?room))
    :effect (and (at ?obj ?room) (free ?gripper)
                 (not (carry ?obj ?gripper)))))
""",
    "logistics": """\
; Logistics (IPC-2000, untyped): trucks move packages within a city, airplanes
; between airports. Same predicates and action schemas as the paper's domain file.
(define (domain logistics)
  (:requirements :strips)
  (:predicates
    (package ?obj)
    (truck ?truck)
    (airplane ?airplane)
    (airport ?airport)
    (location ?loc)
    (in-city ?obj ?city)
    (city ?city)
    (at ?obj ?loc)
    (in ?obj1 ?obj2))

  (:action load-truck
    :parameters (?obj ?truck ?loc)
    :precondition (and (package ?obj) (truck ?truck) (location ?loc)
                       (at ?truck ?loc) (at ?obj ?loc))
    :effect (and (not (at ?obj ?loc)) (in ?obj ?truck)))

  (:action load-airplane
    :parameters (?obj ?airplane ?loc)
    :precondition (and (package ?obj) (airplane ?airplane) (location ?loc)
                       (at ?obj ?loc) (at ?airplane ?loc))
    :effect (and (not (at ?obj ?loc)) (in ?obj ?airplane)))

  (:action unload-truck
    :parameters (?obj ?truck ?loc)
    :precondition (and (package ?obj) (truck ?truck) (location ?loc)
                       (at ?truck ?loc) (in ?obj ?truck))
    :effect (and (not (in ?obj ?truck)) (at ?obj ?loc)))

  (:action unload-airplane
    :parameters (?obj ?airplane ?loc)
    :precondition (and (package ?obj) (airplane ?airplane) (location ?loc)
                       (in ?obj ?airplane) (at ?airplane ?loc))
    :effect (and (not (in ?obj ?airplane)) (at ?obj ?loc)))

  (:action drive-truck
    :parameters (?truck ?loc-from ?loc-to ?city)
    :precondition (and (truck ?truck) (location ?loc-from) (location ?loc-to)
                       (city ?city) (at ?truck ?loc-from)
                       (in-city ?loc-from ?city) (in-city ?loc-to ?city))
    :effect (and (not (at ?truck ?loc-from)) (at ?truck ?loc-to)))

  (:action fly-airplane
    :parameters (?airplane ?loc-from ?loc-to)
    :precondition (and (airplane ?airplane) (airport ?loc-from)
                       (airport ?loc-to) (at ?airplane ?loc-from))
    :effect (and (not (at ?airplane ?loc-from)) (at ?airplane ?loc-to))))
""",
    "visitall": """\
; Visitall (IPC-2011): a robot on a grid must visit every cell. Same predicates
; and action schema as the paper's domain file.
(define (domain grid-visit-all)
  (:requirements :strips)
  (:predicates
    (place ?x)
    (connected ?x ?y)
    (at-robot ?x)
    (visited ?x))

  (:action move
    :parameters (?curpos ?nextpos)
    :precondition (and (place ?curpos) (place ?nextpos) (at-robot ?curpos)
                       (connected ?curpos ?nextpos))
    :effect (and (at-robot ?nextpos) (not (at-robot ?curpos))
                 (visited ?nextpos))))
""",
}
