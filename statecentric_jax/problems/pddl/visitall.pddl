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
