"""The paper-faithful decoder embeds through wlplan and returns the plans of the fast decoders."""

import numpy as np
import pytest

from statecentric_jax.embedding.encoders import WLEncoder, fit_encoder
from statecentric_jax.planning.successors import random_walk
from statecentric_jax.planning.tasks import load_task
from statecentric_jax.problems import layout
from statecentric_jax.search.base import DecodeConfig
from statecentric_jax.search.decoding import decode
from statecentric_jax.search.paper_reference import paper_encoder
from statecentric_jax.search.sequential import decode_sequential


class HalfwayModel:
    """Predicts the point halfway between a state's and the goal's embeddings: deterministic, goal-directed."""

    def init_carry(self, batch_size):
        return None

    def predict_next(self, states, goals, carry):
        return (np.asarray(states) + np.asarray(goals)) / np.float32(2.0), carry


@pytest.mark.parametrize("domain", ["blocks", "visitall"])
def test_paper_reference_plans_equal_the_fast_decoders(data_root, domain, monkeypatch):
    domain_file = layout.domain_file(data_root, domain)
    train = [load_task(domain_file, p) for p in layout.problem_files(data_root, domain, "train")[:3]]
    encoder = fit_encoder("wl", domain, [(task, random_walk(task, 8, i)) for i, task in enumerate(train)])
    tasks = [load_task(domain_file, p) for p in layout.problem_files(data_root, domain, "test-extrapolation")[:2]]
    config = DecodeConfig(beam_width=3, metric="euclidean", horizon_base=15, horizon_per_object=0)
    model = HalfwayModel()
    calls = []
    wlplan = WLEncoder._embed_wlplan
    monkeypatch.setattr(WLEncoder, "_embed_wlplan", lambda self, pairs: calls.append(len(pairs)) or wlplan(self, pairs))
    paper = [r.plan for r in decode_sequential(tasks, model, paper_encoder(encoder), config)]
    monkeypatch.undo()
    assert len(calls) > 20 and set(calls) == {1}  # wlplan, one state per call
    assert paper == [r.plan for r in decode_sequential(tasks, model, encoder, config)]
    assert paper == [r.plan for r in decode(tasks, model, encoder, config)]
    assert sum(len(plan) for plan in paper) > 10
    assert encoder.use_fast  # the encoder given is left as it was
