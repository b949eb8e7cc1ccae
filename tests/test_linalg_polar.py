"""The polar SVD that TPU lowers `svd` to (`qdwh`, then an eigendecomposition), run on
the CPU: bit for bit against JAX's TPU SVD (also run on the CPU), and against NumPy:
singular values, orthonormal factors, reconstruction, subsets, full matrices,
rank-deficient and non-finite input, and bad subsets."""
from __future__ import annotations

import numpy as np
import pytest

import plax
from jax_differential import assert_same_bits_as_jax, requires_jax
from plax_stdlib.lax.linalg import svd_polar

RNG = np.random.default_rng(0)


def _svd(x, **params):
    options = dict(full_matrices=False, compute_uv=True, subset_by_index=None) | params
    return [np.asarray(o) for o in
            plax.jit(lambda a: svd_polar.svd_by_polar(a, **options))(x)]


def _sample(shape, dtype):
    a = RNG.standard_normal(shape).astype(dtype)
    if np.iscomplexobj(a):
        a = a + 1j * RNG.standard_normal(shape).astype(np.float32)
    return a


def _check_factors(a, s, u, vt):
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vt[..., :k, :], a,
                               rtol=1e-5, atol=2e-5)
    for unitary in (u, np.swapaxes(vt, -1, -2)):
        cols = unitary.shape[-1]
        np.testing.assert_allclose(np.swapaxes(unitary, -1, -2).conj() @ unitary,
                                   np.broadcast_to(np.eye(cols), (*a.shape[:-2], cols, cols)),
                                   atol=2e-5)


@requires_jax
def test_bit_identical_to_jax_tpu_svd():
    """A random and a rank-deficient square matrix (batched), a tall one with full
    matrices, a wide one (past 1.15: QR first), a complex one's values."""
    inputs = {"square": np.stack([_sample((6, 6), np.float32),
                                  _sample((6, 2), np.float32) @ _sample((2, 6), np.float32)]),
              "tall": _sample((9, 4), np.float32), "wide": _sample((4, 7), np.float32),
              "complex": _sample((5, 3), np.complex64)}
    assert_same_bits_as_jax("""
import importlib
svd = importlib.import_module("jax._src.tpu.linalg.svd" if lib.__name__ == "jax"
                              else "plax_stdlib.lax.linalg.svd_polar").svd
outs = {"square": lib.vmap(lambda a: svd(a, False))(inputs["square"]),
        "tall": svd(inputs["tall"], True), "wide": svd(inputs["wide"], False),
        "complex": [svd(inputs["complex"], False, False)]}
for name, out in outs.items():
    for n, leaf in enumerate(out):
        results[f"{name}.{n}"] = leaf
""", inputs)


@pytest.mark.parametrize("shape, dtype, full", [
    ((5, 9), np.float32, True), ((2, 7, 5), np.float32, False), ((6, 4), np.complex64, False)])
def test_factors_match_numpy(shape, dtype, full):
    a = _sample(shape, dtype)
    s, u, vt = _svd(a, full_matrices=full)
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False),
                               rtol=1e-5, atol=1e-5)
    assert u.shape[-1] == (shape[-2] if full else min(shape[-2:]))
    _check_factors(a, s, u, vt)


def test_rank_deficient_and_zero_matrices():
    a = (RNG.standard_normal((7, 2)) @ RNG.standard_normal((2, 5))).astype(np.float32)
    s, u, vt = _svd(a)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), atol=2e-5)
    _check_factors(a, s, u, vt)
    s, u, vt = _svd(np.zeros((4, 4), np.float32))
    np.testing.assert_array_equal(s, 0.0)


def test_subset_values_only_and_non_finite_input():
    a = _sample((9, 6), np.float32)
    s, u, vt = _svd(a, subset_by_index=(1, 3))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False)[1:3], rtol=1e-5)
    assert u.shape == (9, 2) and vt.shape == (2, 6)
    s, = _svd(a.T, compute_uv=False)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-5)
    a[2, 3] = np.inf
    assert all(np.isnan(o).all() for o in _svd(a))


@pytest.mark.parametrize("subset, full, message", [
    ((2, 2), False, "0 <= start < end <= 4"), ((0, 5), False, "the rank of a 6x4"),
    ((0, 2), True, "cannot both be set"), ((0, 1, 2), False, "must be a pair")])
def test_bad_subsets(subset, full, message):
    with pytest.raises(ValueError, match=message):
        svd_polar.svd(np.ones((6, 4), np.float32), full, subset_by_index=subset)
