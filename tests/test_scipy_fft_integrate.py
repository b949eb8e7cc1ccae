"""plax.scipy.fft (type-II DCTs) and plax.scipy.integrate against SciPy (every norm,
axis and length, real and complex), transformations, bad input, and JAX's dtypes and
values in one subprocess."""
import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax.scipy import fft as pf
from plax.scipy import integrate as pi
from plax.test_util import check_grads

sf = pytest.importorskip("scipy.fft")
si = pytest.importorskip("scipy.integrate")

RNG = np.random.default_rng(3)


def _close(got, want):
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", [(5,), (4, 6)], ids=str)
def test_dct_against_scipy(shape):
    x = RNG.normal(size=shape)
    z = x + 1j * RNG.normal(size=shape)
    with plax.enable_x64(True):
        for norm in (None, "ortho"):
            for name in ("dct", "idct"):
                mine, theirs = getattr(pf, name), getattr(sf, name)
                for n in (None, 3, 8):
                    _close(mine(x, n=n, norm=norm), theirs(x, n=n, norm=norm))
                _close(mine(x, n=7, axis=0, norm=norm), theirs(x, n=7, axis=0, norm=norm))
                _close(mine(z, norm=norm), theirs(z, norm=norm))
            for name in ("dctn", "idctn"):
                mine, theirs = getattr(pf, name), getattr(sf, name)
                _close(mine(x, norm=norm), theirs(x, norm=norm))
                _close(mine(z, axes=(0,), norm=norm), theirs(z, axes=(0,), norm=norm))
                if x.ndim == 2:
                    _close(mine(x, s=(2, 7), norm=norm), theirs(x, s=(2, 7), norm=norm))
                    _close(mine(x, s=3, norm=norm), theirs(x, s=3, norm=norm))
                    _close(mine(x, s=(3,), axes=(-2,), norm=norm),
                           theirs(x, s=(3,), axes=(-2,), norm=norm))


def test_dctn_three_axes_and_round_trip():
    x = RNG.normal(size=(2, 3, 4))
    with plax.enable_x64(True):
        _close(pf.dctn(x), sf.dctn(x))
        _close(pf.idctn(pf.dctn(x, norm="ortho"), norm="ortho"), x)
        _close(pf.idct(pf.dct(x, axis=1), axis=1), x)
        _close(pf.dct(x, norm="backward"), sf.dct(x, norm="backward"))
        _close(pf.idctn(x, axes=(2, 0), norm="backward"), sf.idctn(x, axes=(2, 0)))
        for transform in (pf.dct, pf.idct):  # single precision stays single under x64
            for norm in (None, "ortho"):
                assert transform(x.astype(np.float32), norm=norm).dtype == np.float32
                assert transform(x.astype(np.complex64), norm=norm).dtype == np.complex64


def test_trapezoid_against_scipy():
    y = RNG.normal(size=(3, 5))
    x = np.sort(RNG.normal(size=5))
    with plax.enable_x64(True):
        _close(pi.trapezoid(y), si.trapezoid(y))
        _close(pi.trapezoid(y, x), si.trapezoid(y, x))
        _close(pi.trapezoid(y, dx=0.3, axis=0), si.trapezoid(y, dx=0.3, axis=0))
        _close(pi.trapezoid(y + 2j * y, x), si.trapezoid(y + 2j * y, x))


def test_transformations():
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    f = plax.jit(lambda v: pf.dctn(v, s=(3, 6), norm="ortho"))
    np.testing.assert_allclose(f(x), sf.dctn(x, s=(3, 6), norm="ortho"), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(plax.vmap(lambda r: pf.idct(r, n=5))(x),
                               sf.idct(x, n=5), rtol=1e-5, atol=1e-5)
    with plax.enable_x64(True):
        check_grads(lambda v: pf.dct(v, n=6, norm="ortho"), (RNG.normal(size=(4,)),), order=1)
        check_grads(lambda v: pf.idctn(v), (RNG.normal(size=(3, 2)),), order=1)
        check_grads(lambda y, x: pi.trapezoid(y, x), (RNG.normal(size=(4,)),
                                                      np.sort(RNG.normal(size=4))), order=1)


def test_bad_input():
    with pytest.raises(NotImplementedError, match="only DCT type 2"):
        pf.dct(np.ones(4), type=3)
    with pytest.raises(NotImplementedError, match="only DCT type 2"):
        pf.idctn(np.ones((2, 2)), type=1)
    with pytest.raises(ValueError, match="norm='forward' is not implemented"):
        pf.idct(np.ones(4), norm="forward")
    with pytest.raises(ValueError, match="norm='xx' is not implemented"):
        pf.dctn(np.ones((2, 2)), norm="xx")
    with pytest.raises(TypeError, match="transform length must be positive, got n=0"):
        pf.dct(np.ones(4), n=0)  # JAX's class here; SciPy's (ValueError) matches too
    with pytest.raises(ValueError, match="transform length must be positive, got n=-2"):
        pf.idct(np.ones(4), n=-2)
    with pytest.raises(ValueError, match="s must have at most x.ndim"):
        pf.dctn(np.ones(4), s=(2, 3))
    with pytest.raises(ValueError, match="repeated axis"):
        pf.idctn(np.ones((3, 4)), axes=(0, -2))
    with pytest.raises(ValueError, match="out of bounds"):
        pf.dct(np.ones(4), axis=1)
    with pytest.raises(ValueError, match="out of bounds"):
        pf.dct(np.float32(1.0))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        pf.dct([1.0, 2.0])
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        pi.trapezoid([1.0, 2.0])
    # (the widths (3,) meet the heights (2,), as in JAX: a 2-point x would broadcast)
    with pytest.raises(TypeError, match=r"incompatible shapes for broadcasting: \(3,\), \(2,\)"):
        pi.trapezoid(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="out of bounds"):
        pi.trapezoid(np.ones(3), axis=1)


_JAX_BODY = """
import importlib
fft = importlib.import_module(lib.__name__ + ".scipy.fft")
integrate = importlib.import_module(lib.__name__ + ".scipy.integrate")
x = inputs["x"]
results["int"] = fft.dct(np.arange(6))
results["f16"] = fft.idct(x[0].astype(np.float16), norm="ortho")
results["bool"] = fft.dctn(x > 0)
results["c64"] = fft.idctn(x.astype(np.complex64) * (1 + 2j), s=(2, 5))
results["mismatched_s"] = fft.dctn(x, s=(2,), axes=(0, 1), norm="ortho")
results["trapezoid"] = integrate.trapezoid(np.arange(5), dx=0.5)
results["trapezoid_x"] = integrate.trapezoid(x, x[0], axis=-1)
"""


@requires_jax
def test_matches_jax():
    assert_same_as_jax(_JAX_BODY, {"x": RNG.normal(size=(3, 4)).astype(np.float32)},
                       rtol=2e-5, atol=2e-5, tolerances={"f16": (3e-3, 3e-3)})
