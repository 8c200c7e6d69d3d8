"""The cyclic garbage collector is paused while a task is grounded, and restored as it was."""

import gc

from statecentric_jax.collector import collector_paused
from statecentric_jax.planning.tasks import ground_reachable, load_task
from tests.planning.test_tasks import write


def test_collector_paused_restores_the_collector():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_grounding_runs_with_the_collector_paused(tmp_path):
    seen = []

    def grounder(*files):
        seen.append(gc.isenabled())
        return ground_reachable(*files)

    task = load_task(*write(tmp_path), grounder=grounder)
    assert task.operators and seen == [False] and gc.isenabled()
