"""plax.scipy.linalg's special matrices against SciPy's (values), JAX's (dtypes,
batching) and their defining properties (inverses, orthogonality, roots)."""
import numpy as np
import pytest
import scipy.linalg as sl

import plax
import plax.scipy.linalg as pl

RNG = np.random.default_rng(3)
C = RNG.normal(size=4).astype(np.float32)
R = RNG.normal(size=3).astype(np.float32)
POLY = np.array([2.0, -3.0, 0.5, 4.0, 1.0, -2.0], np.float32)


@pytest.mark.parametrize("name, args", [
    ("toeplitz", (C,)), ("toeplitz", (C, R)), ("toeplitz", (C + 1j * C[::-1],)),
    ("hankel", (C,)), ("hankel", (C, R)), ("circulant", (C,)),
    ("leslie", (C, R)), ("companion", (POLY,)), ("companion", (POLY[:2],)),
    ("fiedler", (C,)), ("fiedler_companion", (POLY,)), ("fiedler_companion", (POLY[:3],)),
    ("fiedler_companion", (POLY[:2],)),
    ("convolution_matrix", (C, 3)), ("convolution_matrix", (C, 6, "same")),
    ("convolution_matrix", (C, 3, "valid")), ("convolution_matrix", (R, 5, "valid")),
    ("convolution_matrix", (R, 2, "same")),
])
def test_matrices_from_values_match_scipy(name, args):
    got = getattr(pl, name)(*args)
    want = getattr(sl, name)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    jitted = plax.jit(lambda *a: getattr(pl, name)(*a, *args[len(a):]))(*args[:1])
    np.testing.assert_allclose(jitted, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, args, dtype", [
    ("hilbert", (5,), np.float32), ("invhilbert", (5,), np.float32),
    ("pascal", (6,), np.float32), ("pascal", (5, "lower"), np.float32),
    ("pascal", (5, "upper"), np.float32), ("invpascal", (6,), np.float32),
    ("invpascal", (4, "lower"), np.float32), ("helmert", (5,), np.float32),
    ("helmert", (4, True), np.float32), ("hadamard", (8,), np.int32),
    ("dft", (5,), np.complex64), ("dft", (4, "sqrtn"), np.complex64),
    ("dft", (6, "n"), np.complex64),
])
def test_matrices_of_a_size_match_scipy_in_jax_dtypes(name, args, dtype):
    got = getattr(pl, name)(*args)
    assert got.dtype == dtype
    # JAX's binomials go through lgamma in float32: a few ulps off SciPy's exact ones
    # (test_bits_vs_jax checks they are JAX's bits)
    np.testing.assert_allclose(got, getattr(sl, name)(*args), rtol=1e-5, atol=1e-6)


def test_defining_properties():
    # (hilbert(4) is ill-conditioned and invhilbert's float32 entries are JAX's, from lgamma)
    np.testing.assert_allclose(pl.invhilbert(4) @ pl.hilbert(4), np.eye(4), atol=1e-2)
    np.testing.assert_allclose(pl.invpascal(5) @ pl.pascal(5), np.eye(5), atol=1e-3)
    h = np.asarray(pl.helmert(6, full=True))
    np.testing.assert_allclose(h @ h.T, np.eye(6), atol=1e-6)
    np.testing.assert_array_equal(pl.hadamard(4) @ pl.hadamard(4).T, 4 * np.eye(4))
    roots = np.sort_complex(np.roots(POLY.astype(np.float64)))
    for make in (pl.companion, pl.fiedler_companion):
        np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(np.asarray(make(POLY),
                                                                              np.float64))),
                                   roots, rtol=1e-4)
    v = RNG.normal(size=5).astype(np.float32)
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(pl.convolution_matrix(C, 5, mode) @ v,
                                   np.convolve(C, v, mode), rtol=1e-5, atol=1e-5)


def test_batched_values_and_gradients():
    cs = RNG.normal(size=(2, 3)).astype(np.float32)
    rs = RNG.normal(size=(2, 4)).astype(np.float32)
    batched = pl.toeplitz(cs, rs)
    assert batched.shape == (2, 3, 4)
    for k in range(2):
        np.testing.assert_allclose(batched[k], sl.toeplitz(cs[k], rs[k]), rtol=1e-6)
    np.testing.assert_allclose(pl.circulant(cs)[1], sl.circulant(cs[1]), rtol=1e-6)
    # each c[k] appears on one diagonal of the circulant: its gradient counts them
    g = plax.grad(lambda c: pl.circulant(c).sum())(C)
    np.testing.assert_allclose(g, np.full(4, 4.0))
    g = plax.grad(lambda c: (pl.toeplitz(c) * np.arange(16.0).reshape(4, 4)).sum())(C)
    want = np.array([sum(v for (i, j), v in np.ndenumerate(np.arange(16.0).reshape(4, 4))
                         if abs(i - j) == k) for k in range(4)])
    np.testing.assert_allclose(g, want)


def test_empty_and_edge_sizes():
    assert pl.toeplitz(np.zeros(0, np.float32), R).shape == (0, 3)
    assert pl.hankel(C, np.zeros(0, np.float32)).shape == (4, 0)
    assert pl.fiedler_companion(np.ones(1, np.float32)).shape == (0, 0)
    assert pl.dft(0).shape == (0, 0) and pl.hilbert(0).shape == (0, 0)
    np.testing.assert_array_equal(pl.hadamard(1), [[1]])
    assert pl.hadamard(2, dtype=np.float32).dtype == np.float32


@pytest.mark.parametrize("call, error, match", [
    (lambda: pl.hankel(1.0), ValueError, "at least 1-dimensional"),
    (lambda: pl.leslie(np.ones(1), np.ones(0)), ValueError, "at least 2"),
    (lambda: pl.leslie(np.ones(3), np.ones(1)), ValueError, "one less than the length of f"),
    (lambda: pl.companion(np.ones(1)), ValueError, "at least 2"),
    (lambda: pl.leslie([1.0, 2.0], [1.0]), TypeError, "ndarray or scalar"),
    (lambda: pl.fiedler_companion(np.zeros(0)), ValueError, "nonzero length"),
    (lambda: pl.convolution_matrix(C, 0), ValueError, "positive integer"),
    (lambda: pl.convolution_matrix(C, 2, "wrap"), ValueError, "mode must be one of"),
    (lambda: pl.convolution_matrix(1.0, 2), ValueError, "at least 1-dimensional"),
    (lambda: pl.hadamard(6), ValueError, "power of 2"),
    (lambda: pl.helmert(0), ValueError, "positive integer"),
    (lambda: pl.pascal(3, "diagonal"), ValueError, "kind"),
    (lambda: pl.dft(3, "half"), ValueError, "scale must be"),
    (lambda: pl.dft(3, dtype=np.float32), ValueError, "complex"),
    (lambda: pl.toeplitz("abc"), TypeError, "toeplitz"),
    # a jit with a static size, as JAX's: a traced size is not hashable
    (lambda: plax.jit(pl.hilbert)(3), ValueError, "static argument 'n' of hilbert"),
])
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()
