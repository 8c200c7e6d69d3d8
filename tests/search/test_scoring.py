"""Distances: a candidate's distance does not depend on the batch it is computed in."""

import numpy as np
import pytest

from statecentric_jax.search.scoring import distances


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_batch_rows_equal_rows_alone(metric):
    rng = np.random.default_rng(0)
    for rows, dim in ((1, 3), (7, 138), (300, 552)):
        targets = rng.normal(size=(rows, dim)).astype(np.float32)
        candidates = rng.integers(0, 40, size=(rows, dim)).astype(np.float32)
        batch = distances(targets, candidates, metric)
        assert batch.dtype == np.float32 and batch.shape == (rows,)
        alone = np.concatenate([distances(targets[i : i + 1], candidates[i : i + 1], metric) for i in range(rows)])
        np.testing.assert_array_equal(batch, alone)
    expected = [1.0 - 4.0 / (2.0 * np.sqrt(8.0)), 1.0] if metric == "cosine" else [2.0, np.sqrt(2.0)]
    got = distances(np.float32([[2, 0], [1, 0]]), np.float32([[2, 2], [0, 1]]), metric)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert np.isfinite(distances(np.zeros((1, 4), np.float32), np.zeros((1, 4), np.float32), metric)).all()
