"""plax.scipy.signal against SciPy (every mode, method and boundary, real and complex,
operands of either size), derivatives, bad input, and JAX's dtypes in a subprocess."""
import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax.scipy import signal as ps
from plax.test_util import check_grads

ss = pytest.importorskip("scipy.signal")

RNG = np.random.default_rng(2)
SHAPES = [((7,), (3,)), ((3,), (6,)), ((5, 4), (2, 3)), ((2, 3), (4, 5)), ((6, 5), (6, 1)),
          ((3, 4), (2, 6)), ((4, 3, 3), (2, 3, 2))]
MODES = ("full", "same", "valid")


def _sample(shape, complex_):
    x = RNG.normal(size=shape)
    return x + 1j * RNG.normal(size=shape) if complex_ else x


def _same_as_scipy(plax_fn, scipy_fn, *args, **kwargs):
    """Equal results, or a ValueError from both."""
    try:
        want = scipy_fn(*args, **kwargs)
    except ValueError:
        with pytest.raises(ValueError, match="at least as large as the other"):
            plax_fn(*args, **kwargs)
        return
    got = plax_fn(*args, **kwargs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_against_scipy(shapes, complex_):
    a, b = _sample(shapes[0], complex_), _sample(shapes[1], complex_)
    with plax.enable_x64(True):
        for mode in MODES:
            for name in ("convolve", "correlate"):
                for method in ("direct", "fft"):
                    _same_as_scipy(getattr(ps, name), getattr(ss, name), a, b, mode,
                                   method=method)
            _same_as_scipy(ps.fftconvolve, ss.fftconvolve, a, b, mode)
            if a.ndim == 2:
                for name in ("convolve2d", "correlate2d"):
                    for boundary in ("fill", "wrap", "symm"):
                        _same_as_scipy(getattr(ps, name), getattr(ss, name), a, b, mode,
                                       boundary, fillvalue=1.5)


def test_under_jit_vmap_and_derivatives():
    a, b = RNG.normal(size=(6,)).astype(np.float32), RNG.normal(size=(3,)).astype(np.float32)
    np.testing.assert_allclose(plax.jit(ps.convolve, static_argnums=2)(a, b, "same"),
                               ss.convolve(a, b, "same"), rtol=1e-5, atol=1e-6)
    batch = RNG.normal(size=(2, 6)).astype(np.float32)
    np.testing.assert_allclose(plax.vmap(lambda r: ps.correlate(r, b))(batch),
                               [ss.correlate(r, b) for r in batch], rtol=1e-5, atol=1e-6)
    with plax.enable_x64(True):
        check_grads(lambda x, k: ps.convolve2d(x, k, "same", "symm"),
                    (RNG.normal(size=(4, 3)), RNG.normal(size=(2, 2))), order=2)
        check_grads(lambda x, k: ps.correlate(x, k, method="fft"),
                    (RNG.normal(size=(5,)), RNG.normal(size=(3,))), order=1)


def test_bad_input():
    with pytest.raises(ValueError, match=r"same dimensionality; got shapes \(3,\) and \(2, 2\)"):
        ps.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="mode must be one of"):
        ps.correlate(np.ones(3), np.ones(2), "middle")
    with pytest.raises(ValueError, match="method must be one of"):
        ps.convolve(np.ones(3), np.ones(2), method="winograd")
    with pytest.raises(ValueError, match="inputs must be 2-D"):
        ps.convolve2d(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="boundary must be one of"):
        ps.correlate2d(np.ones((3, 3)), np.ones((2, 2)), boundary="circular")
    with pytest.raises(ValueError, match="inputs cannot be empty"):
        ps.convolve(np.ones(0), np.ones(2))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        ps.convolve([1.0, 2.0], np.ones(2))


_JAX_BODY = """
signal = lib.scipy.signal
a = np.arange(12).reshape(3, 4)
b = np.array([[1, -2], [0, 3]])
f16 = np.array([0.5, 1.0, -2.0, 3.0], np.float16)
results["int"] = signal.convolve(a, b)
results["f16"] = signal.correlate(f16, f16[:2], "same")
results["same"] = signal.convolve2d(a.astype(np.float32), b, "same")
results["corr2d"] = signal.correlate2d(a, b.astype(np.float32), "valid")
results["swapped"] = signal.correlate2d(b.astype(np.complex64) * 1j, a, "valid")
results["fft"] = signal.fftconvolve(a.astype(np.float32), b.astype(np.float32), "same")
"""


@requires_jax
def test_matches_jax():
    assert_same_as_jax(_JAX_BODY, {}, rtol=1e-5, atol=1e-5,
                       tolerances={"f16": (3e-3, 3e-3)})
