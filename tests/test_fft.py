"""Fourier transforms: `plax.numpy.fft` against `numpy.fft` for every function and
`norm`, lengths that pad and truncate, several axes and dtypes (under jit); the
`lax.fft` primitive's derivatives (forward mode against finite differences,
reverse mode by the dot-product test, for all four kinds), batching, and bad
input."""
from __future__ import annotations

import numpy as np
import pytest
from matrix_samples import sample

import plax
import plax.numpy as jnp
from plax import lax
from plax.test_util import check_grads

NORMS = [None, "ortho", "forward"]


# name → (plax call, numpy call); each takes (real input, complex input, norm).
CALLS = {
    "fft": lambda m, x, z, norm: m.fft(z, norm=norm),
    "fft_n_axis": lambda m, x, z, norm: m.fft(x, n=7, axis=1, norm=norm),
    "ifft": lambda m, x, z, norm: m.ifft(z, n=3, norm=norm),
    "rfft": lambda m, x, z, norm: m.rfft(x, norm=norm),
    "rfft_n": lambda m, x, z, norm: m.rfft(x, n=9, axis=0, norm=norm),
    "irfft": lambda m, x, z, norm: m.irfft(z, norm=norm),
    "irfft_n": lambda m, x, z, norm: m.irfft(z, n=7, axis=1, norm=norm),
    "hfft": lambda m, x, z, norm: m.hfft(z, norm=norm),
    "ihfft": lambda m, x, z, norm: m.ihfft(x, norm=norm),
    "fft2": lambda m, x, z, norm: m.fft2(z, norm=norm),
    "ifft2": lambda m, x, z, norm: m.ifft2(z, s=(3, 7), axes=(0, 2), norm=norm),
    "rfft2": lambda m, x, z, norm: m.rfft2(x, norm=norm),
    "irfft2": lambda m, x, z, norm: m.irfft2(z, norm=norm),
    "fftn": lambda m, x, z, norm: m.fftn(z, norm=norm),  # four axes: two lax.fft calls
    "ifftn": lambda m, x, z, norm: m.ifftn(z, axes=(1, 3), norm=norm),
    "rfftn": lambda m, x, z, norm: m.rfftn(x, norm=norm),
    "irfftn": lambda m, x, z, norm: m.irfftn(z, s=(5, 4, 9), axes=(1, 2, 3), norm=norm),
}


@pytest.fixture(scope="module", params=[np.float32, np.float64], ids=["float32", "float64"])
def computed(request):
    real = np.dtype(request.param)
    cplx = np.result_type(real, np.complex64)
    x, z = sample(real, (3, 4, 5, 6)), sample(cplx, (3, 4, 5, 6), 1)

    def everything(x, z):
        return {f"{name}/{norm}": call(jnp.fft, x, z, norm) for name, call in CALLS.items()
                for norm in NORMS}
    with plax.enable_x64(real == np.float64):
        out = plax.tree_util.tree_map(np.asarray, plax.jit(everything)(x, z))
    return real, x, z, out


@pytest.mark.parametrize("name", CALLS)
def test_transforms_match_numpy(computed, name):
    real, x, z, out = computed
    tol = 1e-4 if real == np.float32 else 1e-11
    for norm in NORMS:
        want = CALLS[name](np.fft, x, z, norm)
        got = out[f"{name}/{norm}"]
        assert got.shape == want.shape
        assert got.dtype == (np.result_type(real, np.complex64) if np.iscomplexobj(want) else real)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_frequencies_and_shifts():
    np.testing.assert_allclose(jnp.fft.fftfreq(7, 0.5), np.fft.fftfreq(7, 0.5), rtol=1e-6)
    np.testing.assert_allclose(jnp.fft.fftfreq(8), np.fft.fftfreq(8), rtol=1e-6)
    np.testing.assert_allclose(jnp.fft.rfftfreq(9, 2.0), np.fft.rfftfreq(9, 2.0), rtol=1e-6)
    assert jnp.fft.fftfreq(4).dtype == np.float32
    x = np.arange(30).reshape(5, 6)
    np.testing.assert_array_equal(jnp.fft.fftshift(x), np.fft.fftshift(x))
    np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes=1), np.fft.ifftshift(x, axes=1))
    np.testing.assert_array_equal(jnp.fft.ifftshift(jnp.fft.fftshift(x)), x)


def test_dtypes_and_empty_arrays():
    assert jnp.fft.fft(np.arange(4)).dtype == np.complex64
    assert jnp.fft.rfft(np.arange(4, dtype=np.int32)).dtype == np.complex64
    assert jnp.fft.irfft(np.ones(3, np.float32)).dtype == np.float32
    assert jnp.fft.fft(np.zeros((0, 4), np.complex64)).shape == (0, 4)
    np.testing.assert_array_equal(jnp.fft.rfft(np.zeros((3, 0), np.float32), n=4),
                                  np.zeros((3, 3)))


# --- the primitive: derivatives and batching -----------------------------------------------

def _grads(f, *args, order=2):
    with plax.enable_x64(True):
        check_grads(plax.jit(f), args, order)


@pytest.mark.parametrize("n", [5, 6], ids=["odd", "even"])
def test_fft_derivatives(n):
    x = sample(np.float64, (3, 4, n))
    y = sample(np.float64, (3, 4, n), 1)
    spectrum = np.fft.rfft2(x)
    for kind in ("fft", "ifft"):
        _grads(lambda re, im, k=kind: jnp.imag(lax.fft(lax.complex(re, im), k, (4, n))), x, y)
    _grads(lambda x: (jnp.real(lax.fft(x, "rfft", (4, n))), jnp.imag(lax.fft(x, "rfft", (n,)))),
           x)
    _grads(lambda re, im: lax.fft(lax.complex(re, im), "irfft", (4, n)), spectrum.real,
           spectrum.imag)


def test_fft_transposes_are_adjoint():
    """⟨ct, F x⟩ = ⟨Fᵀ ct, x⟩ for the pairing Re Σ a·b (JAX's convention)."""
    with plax.enable_x64(True):
        for kind, shape, lengths in [("fft", (3, 4), (4,)), ("ifft", (2, 3, 5), (3, 5)),
                                     ("rfft", (3, 6), (6,)), ("irfft", (2, 4, 3), (4, 4))]:
            dtype = np.float64 if kind == "rfft" else np.complex128
            x = sample(dtype, shape)
            out, f_vjp = plax.vjp(lambda v, k=kind, ln=lengths: lax.fft(v, k, ln), x)
            ct = sample(np.asarray(out).dtype, np.shape(out), 1)
            ct_x, = f_vjp(ct)
            lhs = np.real(np.sum(ct * np.asarray(out)))
            rhs = np.real(np.sum(np.asarray(ct_x) * x))
            np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


def test_vmap_of_fft_matches_a_loop():
    z = sample(np.complex64, (3, 4, 5))
    mapped = plax.vmap(lambda v: jnp.fft.fft2(v), in_axes=2)(z)
    np.testing.assert_allclose(mapped, np.stack([np.fft.fft2(z[:, :, i]) for i in range(5)]),
                               rtol=1e-4, atol=1e-4)
    x = sample(np.float32, (3, 8))
    mapped = plax.vmap(lambda v: lax.fft(v, "rfft", (8,)))(x)
    np.testing.assert_allclose(mapped, np.fft.rfft(x), rtol=1e-4, atol=1e-4)


# --- bad input ---------------------------------------------------------------------------------

def test_bad_input():
    with pytest.raises(ValueError, match="Invalid norm value 'bad'"):
        jnp.fft.fft(np.ones(4), norm="bad")
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        jnp.fft.fft(np.ones(4), axis=2)
    with pytest.raises(ValueError, match="must be positive"):
        jnp.fft.irfft(np.ones(4), n=0)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.fft.fft2(np.ones(4))
    with pytest.raises(ValueError, match="rfft takes real input"):
        jnp.fft.rfft(np.ones(4, np.complex64))
    with pytest.raises(ValueError, match="repeated axes"):
        jnp.fft.fftn(np.ones((2, 2)), axes=(0, 0))
    with pytest.raises(ValueError, match="unknown FFT type"):
        lax.fft(np.ones(4, np.complex64), "dct", (4,))
    with pytest.raises(TypeError, match="does not accept dtype float32"):
        lax.fft_p.bind(np.ones(4, np.float32), fft_type=lax.FftType.FFT, fft_lengths=(4,))
    with pytest.raises(ValueError, match="needs trailing dimensions"):
        lax.fft(np.ones((2, 4), np.complex64), "fft", (3,))
