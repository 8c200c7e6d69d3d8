"""Two Logistics states that no function of 1-WL colours tells apart, though their costs differ.

    python -m benchmarks.expressivity \
        --run=runs/generalization/logistics/model-state-alpha10-aggregation4-calls200-value

Two cities, one airport each, a truck and an airplane at each airport, two packages bound one
for each airport. In state A each package is in the truck of its goal city (two unloads to go);
in state B the packages are swapped between the trucks (each must cross by air). Fast Downward
(A* with LM-cut) proves both costs. As graphs, A holds two short cycles (package, its truck, its
goal airport) and B one long one with the same labels around every node, which colour refinement
(1-WL) cannot tell apart at any number of iterations, on either wlplan graph: every 1-WL
histogram, hence every cost-to-go on one, is the same for A and B. wlplan's 2-WL variants, which
colour pairs of objects, separate them, and so do goal paths (`paths:<length>`,
`embedding/goal_paths.py`), which follow each goal's objects to each other. This is the "truck in
the package's goal city" question of docs/log.md, in its smallest form.

One row per `--features` spec (vocabulary collected from A and B): its dimension and whether A and
B get equal features; with `--run`, the run's cost-to-go of A and B as decoding reads it.
"""

from __future__ import annotations

import pathlib
import tempfile
from collections.abc import Sequence

import numpy as np
from absl import flags

from benchmarks.common import cost_to_go_of, fit_features, print_header
from statecentric_jax.cli import run_main
from statecentric_jax.errors import InputError
from statecentric_jax.learning.ensemble import load_run
from statecentric_jax.planning.tasks import load_task, problem_from_state
from statecentric_jax.problems import domains, fast_downward

_FEATURES = flags.DEFINE_list(
    "features",
    ["wl:ilg:2", "wl:ilg:8", "wl:ploig:8", "lwl2:ploig:1", "kwl2:ploig:1", "paths:4"],
    "<algorithm>:<graph>:<iterations>[:set] (wlplan) or paths:<length> (goal paths).",
)
_RUN = flags.DEFINE_string("run", None, "A trained Logistics run with a cost-to-go (optional).")

PROBLEM = """(define (problem two-cities)
  (:domain logistics)
  (:objects a0 a1 c0 c1 t0 t1 l0 l1 p0 p1)
  (:init (airplane a0) (airplane a1) (city c0) (city c1) (truck t0) (truck t1)
    (location l0) (location l1) (in-city l0 c0) (in-city l1 c1) (airport l0) (airport l1)
    (package p0) (package p1) (at t0 l0) (at t1 l1) (at a0 l0) (at a1 l1)
    (in p0 t0) (in p1 t1))
  (:goal (and (at p0 l0) (at p1 l1))))
"""
SWAP = ({"(in p0 t0)", "(in p1 t1)"}, {"(in p0 t1)", "(in p1 t0)"})


def optimal_cost(domain_file: pathlib.Path, problem_text: str, folder: pathlib.Path, name: str) -> int:
    """Fast Downward's proved-optimal plan length (A* with LM-cut alone)."""
    problem_file = folder / f"{name}.pddl"
    problem_file.write_text(problem_text)
    astar = fast_downward.default_configs(astar_time_limit=60)[:1]
    result = fast_downward.solve(domain_file, problem_file, astar)
    if result.plan is None:
        raise InputError(problem_file, f"no optimal plan ({result.status}: {result.message})")
    return len(result.plan)


def main(argv: Sequence[str]) -> None:
    del argv
    domain_file = domains.domain_file("logistics")
    run = load_run(_RUN.value) if _RUN.value else None
    if run is not None and run.cost_to_go is None:
        raise InputError(_RUN.value, "this run has no cost-to-go (config value.kind is none)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        (folder / "two-cities.pddl").write_text(PROBLEM)
        task = load_task(domain_file, folder / "two-cities.pddl")
        state_a = frozenset(task.init)
        state_b = (state_a - SWAP[0]) | SWAP[1]
        costs = [
            optimal_cost(domain_file, problem_from_state(task, state, name), folder, name)
            for state, name in ((state_a, "a"), (state_b, "b"))
        ]
        print_header(["features", "D", "A and B"])
        for spec in _FEATURES.value:
            encoder = fit_features(spec, "logistics", [(task, [state_a, state_b])])
            a, b = encoder.embed([(task, state_a), (task, state_b)])
            print(f"| {spec} | {encoder.dim} | {'equal' if np.array_equal(a, b) else 'differ'} |")
        print(f"\noptimal plan lengths (Fast Downward, A* with LM-cut): A {costs[0]}, B {costs[1]}")
        if run is not None:
            h = cost_to_go_of(run, task, [state_a, state_b], [None, None])
            print(f"the run's cost-to-go (clamped at zero, as decoding reads it): A {h[0]:.2f}, B {h[1]:.2f}")


if __name__ == "__main__":
    run_main(main)
