(define (problem visitall-w01h01-s01)
  (:domain grid-visit-all)
  (:objects loc-x0-y0)
  (:init
    (at-robot loc-x0-y0)
    (visited loc-x0-y0)
    (place loc-x0-y0)
  )
  (:goal
    (and
      (visited loc-x0-y0)
    )
  )
)
