"""Plan decoding: oracle models reproduce known plans; batching changes nothing."""

import dataclasses
import threading

import numpy as np
import pytest

from statecentric_jax.planning import tasks
from statecentric_jax.planning.plans import simulate
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.search import expander, limits
from statecentric_jax.search.base import DecodeConfig
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.expander import DecodeStats
from statecentric_jax.search.sequential import decode_sequential
from statecentric_jax.search.strategies import make_strategy
from tests.search.blocks import DOMAIN, PLANS, AtomEncoder, OracleModel, problem


@pytest.mark.parametrize("beam_width", [1, 3])
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_oracle_reproduces_known_plans(tasks, beam_width, metric):
    encoder = AtomEncoder()
    model = OracleModel(encoder, tasks, {t.name: PLANS[t.name] for t in tasks})
    config = DecodeConfig(beam_width=beam_width, metric=metric)
    results = decode(tasks, model, encoder, config)
    assert [r.plan for r in results] == [PLANS[t.name] for t in tasks]
    assert all(r.solved and r.outcome == "goal" for r in results)
    assert [r.plan for r in decode_sequential(tasks, model, encoder, config)] == [r.plan for r in results]


class ConstantModel:
    """A model with no idea: always predicts the same vector (ties everywhere)."""

    def __init__(self, dim):
        self.target = np.linspace(1.0, 2.0, dim, dtype=np.float32)

    def init_carry(self, batch_size):
        return None

    def predict_next(self, states, goals, carry):
        return np.tile(self.target, (len(states), 1)), carry


def test_batch_equals_alone_and_sequential(tasks):
    encoder = AtomEncoder()
    model = ConstantModel(encoder.dim)
    config = DecodeConfig(beam_width=3, horizon_base=25)
    together = decode(tasks, model, encoder, config)
    alone = [decode([t], model, encoder, config)[0] for t in tasks]
    assert [r.plan for r in together] == [r.plan for r in alone]
    assert [r.plan for r in together] == [r.plan for r in decode_sequential(tasks, model, encoder, config)]
    for task, result in zip(tasks, together):  # every plan is executable
        simulate(task, result.plan, require_goal=result.solved)


def test_beam_width_one_is_greedy(tasks):
    encoder = AtomEncoder()
    model = ConstantModel(encoder.dim)
    config = DecodeConfig(beam_width=1, horizon_base=8, metric="euclidean")
    result = decode(tasks[:1], model, encoder, config)[0]
    task, state, expected = tasks[0], tasks[0].init, []
    visited = {state}
    from statecentric_jax.planning.successors import SuccessorGenerator

    generator = SuccessorGenerator(task)
    assert result.steps > 1
    for _ in range(result.steps):
        options = [(op, s) for op, s in generator.successors(state) if s not in visited]
        if not options:
            break
        distances = [np.linalg.norm(encoder.embed([(task, s)])[0] - model.target) for _, s in options]
        op, state = options[int(np.argmin(distances))]
        visited.add(state)
        expected.append(op.name)
        if task.goal_reached(state):
            break
    assert result.plan == expected


def test_a_wrapped_strategy_factory_watches_each_instance_and_changes_no_plan(tasks):
    encoder = AtomEncoder()
    model = ConstantModel(encoder.dim)
    config = DecodeConfig(beam_width=2, horizon_base=25)
    children: dict[str, int] = {}

    class Counting:
        def __init__(self, strategy, name):
            self.strategy, self.name = strategy, name

        def select(self):
            return self.strategy.select()

        def update(self, expansions):
            children[self.name] = children.get(self.name, 0) + sum(len(e.states) for e in expansions)
            return self.strategy.update(expansions)

    def watched(config, inst, guided):
        return Counting(make_strategy(config, inst, guided), inst.problem.task.name)

    results = decode(tasks, model, encoder, config, make=watched)
    assert [r.plan for r in results] == [r.plan for r in decode(tasks, model, encoder, config)]
    assert set(children) == {t.name for t in tasks} and all(n > 0 for n in children.values())


def test_horizon_is_respected(tasks):
    encoder = AtomEncoder()
    model = ConstantModel(encoder.dim)
    config = DecodeConfig(beam_width=2, horizon_base=3, horizon_per_object=0)
    for result in decode(tasks, model, encoder, config):
        assert result.steps <= 3
        assert result.solved or result.outcome in ("horizon", "dead end")


def test_dead_end_ends_only_that_instance(tmp_path, tasks):
    # One block, unreachable goal: pick-up, then put-down would revisit s_0 -> dead end.
    (tmp_path / "trap.pddl").write_text(
        "(define (problem trap) (:domain blocks) (:objects a)"
        " (:init (clear a) (ontable a) (handempty)) (:goal (and (on a a))))"
    )
    trap = load_task(tmp_path / "domain.pddl", tmp_path / "trap.pddl")
    encoder = AtomEncoder()
    model = OracleModel(encoder, tasks, {t.name: PLANS[t.name] for t in tasks})
    oracle_and_trap = decode([tasks[0], trap, tasks[1]], _WithFallback(model, encoder.dim), encoder, DecodeConfig())
    assert oracle_and_trap[0].solved and oracle_and_trap[2].solved
    assert oracle_and_trap[1].outcome == "dead end" and not oracle_and_trap[1].solved


class _WithFallback:
    """Oracle for known problems, a constant guess for the others."""

    def __init__(self, oracle, dim):
        self.oracle, self.constant = oracle, ConstantModel(dim)

    def init_carry(self, batch_size):
        return self.oracle.init_carry(batch_size)

    def predict_next(self, states, goals, carry):
        known = np.array([g.tobytes() in self.oracle.next_of for g in goals])
        targets = self.constant.predict_next(states, goals, None)[0]
        if known.any():
            targets[known] = self.oracle.predict_next(states[known], goals[known], carry[known])[0]
        return targets, carry + 1


def test_unencodable_instance_is_a_failure_not_a_crash(tasks):
    encoder = AtomEncoder(max_objects=3)
    model = ConstantModel(encoder.dim)
    results = decode(tasks, model, encoder, DecodeConfig(horizon_base=5))
    p4 = results[1]
    assert not p4.solved and p4.outcome.startswith("cannot encode: 4 objects exceed")
    assert results[0].steps > 0 and results[2].steps > 0


def test_real_fsf_encoder_too_small_fails_that_instance(tasks):
    from statecentric_jax.embedding.encoders import fit_encoder

    three_blocks = tasks[0]
    encoder = fit_encoder("fsf", "blocks", [(three_blocks, [three_blocks.init])])  # N = 3 slots
    results = decode(tasks, ConstantModel(encoder.dim), encoder, DecodeConfig(horizon_base=5))
    assert not results[1].solved and results[1].outcome.startswith("cannot encode")
    assert results[0].steps > 0 and results[2].steps > 0


class _ThreadRecordingModel(ConstantModel):
    """Records the thread of every model call; fails on demand."""

    def __init__(self, dim, fail=False):
        super().__init__(dim)
        self.threads, self.fail = set(), fail

    def predict_next(self, states, goals, carry):
        self.threads.add(threading.current_thread().name)
        if self.fail:
            raise RuntimeError("model broke")
        return super().predict_next(states, goals, carry)


def test_model_runs_beside_the_embedding_and_its_errors_surface(tasks):
    encoder = AtomEncoder()
    model = _ThreadRecordingModel(encoder.dim)
    config = DecodeConfig(beam_width=3, horizon_base=25)
    plans = [r.plan for r in decode(tasks, model, encoder, config)]
    assert threading.current_thread().name not in model.threads and all(n.startswith("model") for n in model.threads)
    assert plans == [r.plan for r in decode_sequential(tasks, model, encoder, config)]
    with pytest.raises(RuntimeError, match="model broke"):
        decode(tasks, _ThreadRecordingModel(encoder.dim, fail=True), encoder, config)


def test_time_limit_ends_a_problem_as_timeout_with_its_expansions(towers):
    encoder = AtomEncoder()
    config = DecodeConfig(strategy="best_first", budget=10_000, horizon_base=50)
    unlimited = decode(towers, ConstantModel(encoder.dim), encoder, config)
    assert all(r.expanded > 1 for r in unlimited)
    limited = decode(towers, ConstantModel(encoder.dim), encoder, dataclasses.replace(config, time_limit=1e-9))
    assert [(r.outcome, r.solved, r.plan, r.expanded) for r in limited] == [("timeout", False, [], 1)] * len(towers)


def test_memory_limit_ends_the_largest_problem_first_as_memory(towers, monkeypatch):
    monkeypatch.setattr(limits, "MEMORY_CHECK_SECONDS", 0.0)  # a check after every round
    encoder = AtomEncoder()
    config = DecodeConfig(strategy="best_first", budget=10_000, horizon_base=50, memory_limit_mb=1)
    results = decode(towers, ConstantModel(encoder.dim), encoder, config)
    assert [(r.outcome, r.solved) for r in results] == [("memory", False)] * len(towers)
    assert [r.expanded for r in results] == [1, 2]  # one stopped per check, after each round; ties: the first


def test_resource_limits_enter_a_result_key_only_where_set():
    assert "time_limit" not in DecodeConfig().identity() and "max_in_flight" not in DecodeConfig().identity()
    assert DecodeConfig(time_limit=60, memory_limit_mb=8000).identity()["memory_limit_mb"] == 8000
    with_limit = DecodeConfig(time_limit=60)  # problems decoded together share the clock
    assert with_limit.identity() != dataclasses.replace(with_limit, max_in_flight=1).identity()


class _CountingEncoder(AtomEncoder):
    """Counts the states it embeds."""

    def __init__(self):
        super().__init__()
        self.embedded = 0

    def embed(self, pairs, parents=None):
        self.embedded += len(pairs)
        return super().embed(pairs, parents)


@pytest.fixture
def wide(tmp_path):
    """Ten blocks on the table (ten successors at the root) and a two-block problem."""
    (tmp_path / "domain.pddl").write_text(DOMAIN)
    out = []
    for name, blocks, goal in (("two", "ab", "(on b a)"), ("ten", "abcdefghij", "(on a b) (on b c)")):
        (tmp_path / f"{name}.pddl").write_text(problem(name, list(blocks), goal))
        out.append(load_task(tmp_path / "domain.pddl", tmp_path / f"{name}.pddl"))
    return out


def test_time_limit_ends_a_problem_within_its_expansion(wide, monkeypatch):
    monkeypatch.setattr(expander, "CHUNK_STATES", 4, raising=False)  # limits checked every 4 new states
    built = []
    apply = tasks.Operator.apply
    monkeypatch.setattr(tasks.Operator, "apply", lambda op, state: built.append(op) or apply(op, state))
    encoder, stats = _CountingEncoder(), DecodeStats()
    config = DecodeConfig(strategy="best_first", budget=10_000, horizon_base=50, time_limit=1e-9)
    result = decode(wide[1:], ConstantModel(encoder.dim), encoder, config, stats=stats)[0]
    assert (result.outcome, result.solved, result.plan, result.expanded) == ("timeout", False, [], 0)
    assert stats.expanded == stats.generated == 0 and encoder.embedded < 1 + 10  # the root, not its children
    assert len(built) == 4  # the root's ten successors are built until the first check, not all


def test_memory_limit_within_an_expansion_ends_the_problem_it_grows_for(wide, monkeypatch):
    monkeypatch.setattr(expander, "CHUNK_STATES", 4, raising=False)
    reads = iter([False, True])  # over the limit once: at the second check, after the first chunk is embedded
    monkeypatch.setattr(limits.Limits, "memory_exceeded", lambda self: next(reads, False))
    encoder, stats = _CountingEncoder(), DecodeStats()
    config = DecodeConfig(strategy="best_first", budget=10_000, horizon_base=50, memory_limit_mb=1)
    two, ten = decode(wide, ConstantModel(encoder.dim), encoder, config, stats=stats)
    assert (ten.outcome, ten.solved, ten.expanded) == ("memory", False, 0)
    assert two.solved and two.outcome == "goal"
    alone = decode(wide[:1], ConstantModel(encoder.dim), AtomEncoder(), config)[0]
    assert two.plan == alone.plan and two.expanded == alone.expanded


class _CallRecordingEncoder(AtomEncoder):
    """Records the atoms (state, static and goal) of each call's graphs."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def embed(self, pairs, parents=None):
        self.calls.append([len(task.static) + len(task.goal) + len(state) for task, state in pairs])
        return super().embed(pairs, parents)


@pytest.mark.parametrize(
    ("bounds", "measure", "most"),
    [
        ({"CHUNK_STATES": 1}, "states", 1),
        ({"CHUNK_STATES": 3}, "states", 3),
        ({"CHUNK_ATOMS": 1}, "states", 1),
        ({"CHUNK_ATOMS": 40}, "atoms", 40),
        ({"CHUNK_SECONDS": 0.0, "FIRST_CHUNK_ATOMS": 1}, "states", 1),  # at any pace, one state per chunk
    ],
)
def test_chunks_change_no_plan(tasks, monkeypatch, bounds, measure, most):
    """Each problem alone (one node per expansion): every embedding call keeps to the bounds."""
    encoder = AtomEncoder()
    config = DecodeConfig(strategy="best_first", budget=10_000, horizon_base=50, time_limit=1e6)
    whole = [decode([task], ConstantModel(encoder.dim), encoder, config)[0] for task in tasks]
    for name, value in bounds.items():
        monkeypatch.setattr(expander, name, value)
    recording = _CallRecordingEncoder()
    chunked = [decode([task], ConstantModel(recording.dim), recording, config)[0] for task in tasks]
    assert [(r.plan, r.expanded) for r in chunked] == [(r.plan, r.expanded) for r in whole]
    sizes = [len(call) if measure == "states" else sum(call) for call in recording.calls]
    assert max(sizes) <= most and (most == 1 or max(sizes) > 1)
