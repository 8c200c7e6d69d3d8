"""Successor generation: the precondition-indexed generator vs the naive loop over all operators.

    python benchmarks/successors.py --pddl_root=<paper splits>

For each domain, takes the extrapolation problem with the most ground operators,
collects states from a seeded random walk, and times both generators on the same
states (interleaved repeats, best of 5). Successors/s counts (operator, state) pairs.
"""

import functools
import time

from absl import flags

from benchmarks.common import print_header
from statecentric_jax.cli import run_main
from statecentric_jax.planning.successors import SuccessorGenerator, naive_successors, random_walk
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout

FLAGS = flags.DEFINE_string("pddl_root", "data", "PDDL root (data/ or a paper-splits-like tree).")
SPLIT = flags.DEFINE_string("split", "test-extrapolation", "Split whose largest problem is used.")
STEPS = flags.DEFINE_integer("steps", 300, "Random-walk states per domain.")


def best_time(fn, states, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for state in states:
            fn(state)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv):
    del argv
    print_header(
        [
            "domain",
            "problem",
            "objects",
            "ground ops",
            "mean successors",
            "indexed succ/s",
            "naive succ/s",
            "speed-up",
        ]
    )
    for domain in layout.available_domains(FLAGS.value):
        domain_file = layout.domain_file(FLAGS.value, domain)
        tasks = [load_task(domain_file, p) for p in layout.problem_files(FLAGS.value, domain, SPLIT.value)]
        task = max(tasks, key=lambda t: (len(t.operators), t.name))
        generator = SuccessorGenerator(task)
        states = random_walk(task, STEPS.value, seed=0)
        pairs = sum(len(generator.successors(s)) for s in states)
        fast = best_time(generator.successors, states)
        naive = best_time(functools.partial(naive_successors, task), states)
        print(
            f"| {domain} | {task.name} | {len(task.objects)} | {len(task.operators)} | {pairs / len(states):.1f} "
            f"| {pairs / fast:,.0f} | {pairs / naive:,.0f} | {naive / fast:.2f}x |"
        )


if __name__ == "__main__":
    run_main(main)
