"""Best-first search with `prune_symmetric`: the same problems solved, with valid plans, from fewer successors."""

import numpy as np

from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout
from statecentric_jax.search.base import DecodeConfig
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import DecodeStats
from tests.search.test_strategies import FixedTargetModel, ReadsModelEmbedding


class MissingGoals:
    """One dimension: how many goal atoms a state lacks (the goal count heuristic as a cost-to-go)."""

    dim = 1

    def embed(self, pairs, parents=None):
        return np.asarray([[len(task.fluent_goal - state)] for task, state in pairs], np.float32)

    def embed_goals(self, tasks):
        return self.embed([(task, task.goal) for task in tasks])


class GoalCount(ReadsModelEmbedding):
    def estimate(self, states, goals):
        return np.asarray(states)[:, 0]


def test_pruned_search_solves_the_same_problems_from_fewer_successors(data_root):
    tasks = [
        load_task(layout.domain_file(data_root, domain), layout.problem_files(data_root, domain, "validation")[-1])
        for domain in ("gripper", "logistics")
    ]
    encoder, generated, results = MissingGoals(), [], []
    for prune in (False, True):
        config = DecodeConfig(
            strategy="best_first",
            metric="euclidean",
            exploration="relaxed_plan",
            estimate_helpful_only=True,
            prune_symmetric=prune,
        )
        stats = DecodeStats()
        model = FixedTargetModel(encoder.dim, seed=0)
        results.append(decode(tasks, model, encoder, config, stats=stats, cost_to_go=GoalCount()))
        generated.append(stats.generated)
    for task, plain, pruned in zip(tasks, *results):
        assert plain.solved and pruned.solved
        simulate(task, pruned.plan)  # raises unless the plan reaches the goal
    assert generated[1] < generated[0]
