"""The polar SVD that TPU lowers `svd` to (QDWH, then an eigendecomposition), run on
the CPU against NumPy: singular values, orthonormal factors, reconstruction."""
from __future__ import annotations

import numpy as np
import pytest

import plax
from plax_stdlib.lax.linalg import polar

RNG = np.random.default_rng(0)


def _svd(x, **params):
    options = dict(full_matrices=False, compute_uv=True, subset_by_index=None) | params
    return [np.asarray(o) for o in plax.jit(lambda a: polar.svd_by_polar(a, **options))(x)]


@pytest.mark.parametrize("shape, dtype", [((16, 16), np.float32), ((24, 8), np.float32),
                                          ((8, 24), np.float32), ((3, 12, 5), np.float32),
                                          ((10, 6), np.complex64)])
def test_factors_match_numpy(shape, dtype):
    a = RNG.standard_normal(shape).astype(dtype)
    if np.iscomplexobj(a):
        a = a + 1j * RNG.standard_normal(shape).astype(np.float32)
    s, u, vt = _svd(a)
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False),
                               rtol=1e-5, atol=1e-5)
    k = s.shape[-1]
    np.testing.assert_allclose((u * s[..., None, :]) @ vt, a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2).conj() @ u, np.broadcast_to(
        np.eye(k), (*shape[:-2], k, k)), atol=1e-5)


def test_ill_conditioned_and_zero_matrices():
    q1, _ = np.linalg.qr(RNG.standard_normal((12, 12)))
    q2, _ = np.linalg.qr(RNG.standard_normal((12, 12)))
    singular = np.logspace(0, -6, 12)
    a = (q1 * singular) @ q2.T
    s, = _svd(a.astype(np.float32), compute_uv=False)
    np.testing.assert_allclose(s, singular, rtol=1e-3, atol=1e-6)
    s, u, vt = _svd(np.zeros((4, 4), np.float32))
    np.testing.assert_array_equal(s, 0.0)


def test_subset_and_full_matrices():
    a = RNG.standard_normal((9, 6)).astype(np.float32)
    s, u, vt = _svd(a, subset_by_index=(1, 3))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False)[1:3], rtol=1e-5)
    assert u.shape == (9, 2) and vt.shape == (2, 6)
    with pytest.raises(NotImplementedError, match="full_matrices=True on TPU"):
        _svd(a, full_matrices=True)


def test_weights_reach_one_in_a_few_steps():
    steps = polar.weights(float(np.finfo(np.float32).eps))
    assert 3 <= len(steps) <= 6 and steps[0][2] > 100 > steps[-1][2]
