"""State embedding throughput: one batched call vs one call per state, WL and FSF.

    python -m benchmarks.embedding --pddl_root=../shared/benchmarks/paper-splits

Decoding embeds every successor of every live beam element at every step, so
this is its hot path. Per domain: the WL vocabulary is collected from seeded
random walks on the training problems (the figure depends little on it; D is
printed); the states are all successors of the states of seeded random walks
on the largest extrapolation problems (extrapolation-size states, as in
decoding). Each encoder is warmed up on the same states first (per-task caches
filled, as during decoding), then timed: best of 3.
"""

import functools
import random
import sys
import time

from absl import app, flags

from benchmarks.common import machine_line
from statecentric_jax import layout
from statecentric_jax.encoders import fit_encoder
from statecentric_jax.successors import SuccessorGenerator
from statecentric_jax.tasks import load_task

_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root (data/ or a paper-splits-like tree).")
_PROBLEMS = flags.DEFINE_integer("problems", 4, "Largest extrapolation problems per domain.")
_STEPS = flags.DEFINE_integer("steps", 40, "Random-walk steps per problem; all successors of each state are embedded.")


def walk(task, steps, seed):
    rng, generator = random.Random(seed), SuccessorGenerator(task)
    states = [task.init]
    for _ in range(steps):
        successors = generator.successors(states[-1])
        if not successors:
            break
        states.append(rng.choice(successors)[1])
    return states


def embed_one_by_one(encoder, pairs):
    return [encoder.embed([pair]) for pair in pairs]


def best_time(fn, repeats=3):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv):
    del argv
    root = _PDDL_ROOT.value
    print(machine_line())
    print(f"command: {' '.join(sys.argv)}")
    print("| domain | encoding | D | problems (objects) | states | batched states/s | one call per state, states/s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for domain in layout.available_domains(root):
        domain_file = layout.domain_file(root, domain)
        train = [load_task(domain_file, p) for p in layout.problem_files(root, domain, "train")]
        tests = [load_task(domain_file, p) for p in layout.problem_files(root, domain, "test-extrapolation")]
        tests = sorted(tests, key=lambda t: (-len(t.objects), t.name))[: _PROBLEMS.value]
        pairs = []
        for i, task in enumerate(tests):
            generator = SuccessorGenerator(task)
            pairs += [(task, nxt) for state in walk(task, _STEPS.value, i) for _, nxt in generator.successors(state)]
        fitted = [(task, walk(task, 20, i)) for i, task in enumerate(train)]
        objects = "/".join(str(len(t.objects)) for t in tests)
        for kind in ("wl", "fsf"):
            encoder = fit_encoder(kind, domain, fitted if kind == "wl" else fitted + [(t, []) for t in tests])
            encoder.embed(pairs)  # warm-up: per-task caches
            batched = best_time(functools.partial(encoder.embed, pairs))
            single = best_time(functools.partial(embed_one_by_one, encoder, pairs))
            print(
                f"| {domain} | {kind} | {encoder.dim} | {len(tests)} ({objects}) | {len(pairs)} "
                f"| {len(pairs) / batched:,.0f} | {len(pairs) / single:,.0f} | {single / batched:.1f}x |"
            )


if __name__ == "__main__":
    app.run(main)
