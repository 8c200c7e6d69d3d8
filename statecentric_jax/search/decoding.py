"""Neuro-symbolic plan decoding (the paper's Algorithm 1), batched across instances.

`decode` runs every instance in lockstep. Each round, every live instance's strategy
names the nodes it wants expanded; one `Expander` call expands all of them (one model
call, in a thread of its own beside one embedding call, then one distance call), and
each strategy updates on its own children. Strategies (`search/strategies.py`): the
paper's beam search, beam search that backtracks on dead ends, best-first search with a
global closed list and a node budget (optionally guided by a learned cost-to-go;
`lazy_best_first` estimates a node only when it expands it), and beam restarts with a
wider beam. With a goal agenda (`search/agenda.py`) an instance runs in stages, each a
smaller task with a few more goals, started when the one before succeeds.
Every plan is executable by construction: it only follows true symbolic successors. With
`action_elimination`, a solved plan then loses the steps the goal does not need
(`planning/elimination.py`), within the problem's time limit (past it, the steps dropped so far).
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence

from statecentric_jax.collector import collector_paused
from statecentric_jax.embedding.encoders import StateEncoder
from statecentric_jax.learning.transitions import TransitionModel
from statecentric_jax.planning.elimination import eliminate_actions
from statecentric_jax.planning.tasks import Task
from statecentric_jax.search.agenda import Agenda
from statecentric_jax.search.base import DecodeConfig, DecodeResult, Instance, Outcome, finish, start
from statecentric_jax.search.expander import CostToGo, DecodeStats, Expander, Problem
from statecentric_jax.search.limits import Limits
from statecentric_jax.search.strategies import (
    Strategy,
    defers_evaluation,
    distances_only_break_ties,
    lazy_model_is_asked,
    make_strategy,
)

StrategyFactory = Callable[[DecodeConfig, Instance, bool], Strategy]


@collector_paused()
def decode(
    tasks: Sequence[Task],
    model: TransitionModel,
    encoder: StateEncoder,
    config: DecodeConfig = DecodeConfig(),
    on_result: Callable[[DecodeResult], None] | None = None,
    stats: DecodeStats | None = None,
    cost_to_go: CostToGo | None = None,
    make: StrategyFactory = make_strategy,
) -> list[DecodeResult]:
    """Decode every task in lockstep; results come back in the order of `tasks`.

    `make` builds each instance's strategy; a diagnostic may wrap `make_strategy` to watch the search."""
    stats = stats if stats is not None else DecodeStats()
    t_begin = time.perf_counter()
    results: list[DecodeResult | None] = [None] * len(tasks)

    def done(index: int, result: DecodeResult) -> None:
        if config.action_elimination and result.solved:
            started = time.perf_counter()
            deadline = started + config.time_limit - result.seconds if config.time_limit else None
            plan = eliminate_actions(tasks[index], result.plan, deadline)
            result = dataclasses.replace(result, plan=plan, seconds=result.seconds + time.perf_counter() - started)
        results[index] = result
        if on_result is not None:
            on_result(result)

    guided = cost_to_go is not None
    stateless = model.init_carry(1) is None
    ties_only = distances_only_break_ties(config, guided, stateless)
    deferred = defers_evaluation(config)
    predict = not ties_only and (not deferred or lazy_model_is_asked(config, stateless))

    def next_stage(i: int, agenda: Agenda) -> tuple[Instance, Strategy, Agenda] | None:
        """Start problem i's next stage (the whole problem without a goal agenda); None when it is done."""
        while True:
            settings = agenda.stage_config(config)
            if settings is None:
                done(i, agenda.out_of_budget())
                return None
            inst = start(i, agenda.stage_task(), model, encoder, settings)
            if isinstance(inst, DecodeResult):
                result = inst
            elif inst.problem.task.goal_reached(inst.root.state):
                result = finish(inst, Outcome.GOAL, inst.root)
            else:
                inst.horizon -= len(agenda.plan)  # the whole plan must fit the problem's horizon
                if ties_only:
                    inst.tie_distances = functools.partial(expander.tie_distances, inst.problem)
                return inst, make(settings, inst, guided), agenda
            final = agenda.stage_done(result, 0)
            if final is not None:
                done(i, final)
                return None

    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="model") as model_thread:
        expander = Expander(model, encoder, config.metric, stats, model_thread, cost_to_go)
        limits = Limits(config)
        pending = collections.deque(range(len(tasks)))
        active: list = []  # (instance, strategy, agenda)
        while pending or active:
            while pending and len(active) < config.max_in_flight:
                i = pending.popleft()
                if (started := next_stage(i, Agenda(tasks[i], config.goal_agenda))) is not None:
                    active.append(started)
            t0 = time.perf_counter()
            requests, owner, estimated = [], [], []
            for k, (inst, strategy, _) in enumerate(active):
                for node, skip, helpful in strategy.select():
                    requests.append((inst.problem, node, skip))
                    estimated.append(helpful)
                    owner.append(k)
            stats.add("strategy", time.perf_counter() - t0)
            ended: dict[Problem, Outcome] = {}  # within the expansion: `over_limits`
            over_limits = functools.partial(_over_limits, limits, active, ended)
            expansions = expander.expand(
                requests, predict=predict, defer=deferred, interrupt=over_limits, estimated=estimated
            )
            t0 = time.perf_counter()
            grouped: list[list] = [[] for _ in active]
            for k, expansion in zip(owner, expansions):
                if expansion is not None:
                    grouped[k].append(expansion)
            heaviest = None  # over the memory limit: the live problem that expanded the most ends
            if limits.memory_exceeded() and active:
                heaviest = max(active, key=lambda live: live[0].expanded + live[2].expanded)
            still_active = []
            for live, mine in zip(active, grouped):
                inst, strategy, agenda = live
                inst.steps += 1
                inst.expanded += len(mine)
                stop = (ended[inst.problem], None) if inst.problem in ended else strategy.update(mine)
                if stop is None and live is heaviest:
                    stop = Outcome.MEMORY, None
                elif stop is None and limits.timed_out(agenda.started):
                    stop = Outcome.TIMEOUT, None
                if stop is None:
                    still_active.append((inst, strategy, agenda))
                    continue
                final = agenda.stage_done(finish(inst, *stop), inst.expanded)
                if final is not None:
                    done(inst.index, final)
                elif (started := next_stage(inst.index, agenda)) is not None:
                    still_active.append(started)
            active = still_active
            stats.add("strategy", time.perf_counter() - t0)
    stats.add("total", time.perf_counter() - t_begin)
    return results  # type: ignore[return-value]  # every slot was filled


def _over_limits(
    limits: Limits, active: Sequence[tuple], ended: dict[Problem, Outcome], successors: Mapping[Problem, int]
) -> list[Problem]:
    """The limits within one expansion (`Expander.expand`'s interrupt, asked only for large ones): the problems
    of `active` out of time end, and over the memory limit, the one with the most successors in it (what grows
    within it); recorded in `ended`."""
    agendas: dict[Problem, Agenda] = {live[0].problem: live[2] for live in active}
    live = [problem for problem in successors if problem not in ended]
    now = {problem: Outcome.TIMEOUT for problem in live if limits.timed_out(agendas[problem].started)}
    rest = [problem for problem in live if problem not in now]
    if rest and limits.memory_exceeded():
        now[max(rest, key=successors.__getitem__)] = Outcome.MEMORY
    ended.update(now)
    return list(now)
