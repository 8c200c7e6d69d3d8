"""State embedding throughput: WL through wl_fast and through wlplan, FSF, and goal paths.

    python -m benchmarks.embedding --pddl_root=<paper splits>

Decoding embeds every successor of every live beam element at every step, so
this is its hot path. Per domain: the WL vocabulary is collected from seeded
random walks on the training problems (D is printed); the states are all
successors of the states of seeded random walks on the largest extrapolation
problems (extrapolation-size states, as in decoding). Three access patterns:
* batched: all states in one call;
* one call per state;
* decoding: like `decoding.decode` with beam width 1 on those problems in
  lockstep: each problem's goal and initial state one call each, then per step
  one call with the successors of every problem's current state (which was
  itself embedded in the previous call), naming that state as their parent.
Goal paths (`--goal_paths` edges, as a cost-to-go reads them beside φ) derive a state's paths from
its parent's where one is named (`derived_goal_paths`), so "decoding pattern" against "one call per
state" is what that saves. Every timed run starts from a freshly loaded encoder (wl_fast keeps the colours
of embedded states, so a warm one would only look states up); best of 3.
"""

import functools
import pathlib
import tempfile
import time
from collections.abc import Callable

from absl import flags

from benchmarks.common import print_header
from statecentric_jax.cli import run_main
from statecentric_jax.embedding.encoders import Encoder, WLEncoder, fit_encoder, load_encoder
from statecentric_jax.embedding.goal_paths import GoalPathEncoder
from statecentric_jax.planning.successors import SuccessorGenerator, random_walk
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout

_PDDL_ROOT = flags.DEFINE_string("pddl_root", "data", "PDDL root (data/ or a paper-splits-like tree).")
_PROBLEMS = flags.DEFINE_integer("problems", 4, "Largest extrapolation problems per domain.")
_STEPS = flags.DEFINE_integer("steps", 40, "Random-walk steps per problem; all successors of each state are embedded.")
_GOAL_PATHS = flags.DEFINE_integer("goal_paths", 4, "Goal paths of at most this many edges (value.goal_paths).")


def decoding_calls(tasks, steps):
    """The embed calls (pairs, parents) of lockstep decoding (beam width 1) along seeded random walks."""
    walks = [random_walk(task, steps, i) for i, task in enumerate(tasks)]
    generators = [SuccessorGenerator(task) for task in tasks]
    calls = [([(task, state)], None) for task in tasks for state in (task.goal, task.init)]
    for step in range(steps):
        children = [
            (task, states[step], nxt)
            for task, generator, states in zip(tasks, generators, walks)
            if step < len(states)
            for _, nxt in generator.successors(states[step])
        ]
        calls.append(([(task, nxt) for task, _, nxt in children], [parent for _, parent, _ in children]))
    return calls


def loaded_wl(path: pathlib.Path, use_fast: bool | None) -> Encoder:
    """The encoder saved at `path`; WL through wl_fast or wlplan (`use_fast`), or FSF (None)."""
    encoder = load_encoder(path)
    if isinstance(encoder, WLEncoder) and use_fast is not None:
        encoder.use_fast = use_fast
    return encoder


def best_rate(load: Callable[[], Encoder], calls, repeats=3):
    """States per second over `calls`, each run on a fresh encoder from `load`."""
    best = float("inf")
    for _ in range(repeats):
        encoder = load()
        start = time.perf_counter()
        for pairs, parents in calls:
            encoder.embed(pairs, parents)
        best = min(best, time.perf_counter() - start)
    return sum(len(pairs) for pairs, _ in calls) / best


def main(argv):
    del argv
    root = _PDDL_ROOT.value
    print_header(
        [
            "domain",
            "encoding",
            "D",
            "problems (objects)",
            "states",
            "batched states/s",
            "one call per state",
            "decoding pattern",
        ]
    )
    with tempfile.TemporaryDirectory() as tmp:
        for domain in layout.available_domains(root):
            domain_file = layout.domain_file(root, domain)
            train = [load_task(domain_file, p) for p in layout.problem_files(root, domain, "train")]
            tests = [load_task(domain_file, p) for p in layout.problem_files(root, domain, "test-extrapolation")]
            tests = sorted(tests, key=lambda t: (-len(t.objects), t.name))[: _PROBLEMS.value]
            pairs = []
            for i, task in enumerate(tests):
                generator = SuccessorGenerator(task)
                pairs += [
                    (task, nxt)
                    for state in random_walk(task, _STEPS.value, i)
                    for _, nxt in generator.successors(state)
                ]
            decoding = decoding_calls(tests, _STEPS.value)
            fitted = [(task, random_walk(task, 20, i)) for i, task in enumerate(train)]
            objects = "/".join(str(len(t.objects)) for t in tests)
            loaders = []  # (name, D, load)
            for kind, engines in (("wl", (("wl_fast", True), ("wl (wlplan)", False))), ("fsf", (("fsf", None),))):
                encoder = fit_encoder(kind, domain, fitted if kind == "wl" else fitted + [(t, []) for t in tests])
                path = pathlib.Path(tmp) / f"{domain}-{kind}.json"
                encoder.save(path)
                loaders += [(name, encoder.dim, functools.partial(loaded_wl, path, fast)) for name, fast in engines]
            paths = GoalPathEncoder.fit(domain, fitted, _GOAL_PATHS.value)
            paths.save(pathlib.Path(tmp) / f"{domain}-paths.json")
            load_paths = functools.partial(GoalPathEncoder.load, pathlib.Path(tmp) / f"{domain}-paths.json")
            loaders.append((f"goal paths ({_GOAL_PATHS.value} edges)", paths.dim, load_paths))
            for name, dim, load in loaders:
                patterns = ([(pairs, None)], [([p], None) for p in pairs], decoding)
                rates = [best_rate(load, calls) for calls in patterns]
                print(
                    f"| {domain} | {name} | {dim} | {len(tests)} ({objects}) | {len(pairs)} | "
                    + " | ".join(f"{rate:,.0f}" for rate in rates)
                    + " |"
                )


if __name__ == "__main__":
    run_main(main)
