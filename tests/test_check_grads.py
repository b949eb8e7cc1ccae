"""`plax.test_util.check_grads` on complex values: derivatives are checked along
complex directions and compared with their imaginary parts (it used to draw real
directions only and cast values to float64, so a rule wrong in the imaginary
direction passed)."""
from __future__ import annotations

import numpy as np
import pytest

import plax
from plax import lax
from plax.extend.ad import linear_jvp
from plax.extend.constructors import INEXACT, unary
from plax.extend.mlir import hlo, mu
from plax.test_util import check_grads, check_jvp, check_vjp

Z = np.array([0.5 + 1.0j, -1.5 + 0.25j, 0.75 - 0.5j], np.complex64)


def _square_with_jvp(jvp):
    @plax.custom_jvp
    def f(z):
        return z * z

    f.defjvp(lambda primals, tangents: (f(*primals), jvp(primals[0], tangents[0])))
    return f


C = np.complex64(1 + 2j)


def _scale_by_c(name: str, transposed_factor):
    """z -> c z, linear (its jvp applies it to the tangent), whose transpose rule
    multiplies by `transposed_factor` (c is right)."""
    return unary(f"tests.{name}", dtypes=INEXACT,
                 jvp=linear_jvp(),
                 lower=lambda ctx, z: hlo.multiply(z, mu.splat(C, ctx.avals_out[0])),
                 transpose=lambda ct, z: [lax.mul(ct, transposed_factor)])


def test_correct_complex_derivatives_pass():
    check_grads(lambda z: z * z, (Z,), 2)  # holomorphic
    check_grads(lambda z: lax.real(z * lax.conj(z)), (Z,), 2)  # complex in, real out
    check_grads(lambda x: lax.complex(x, x * x), (np.real(Z),), 2)  # real in, complex out
    check_grads(_square_with_jvp(lambda z, t: 2 * z * t), (Z,), 1, modes=("fwd",))


def test_a_jvp_wrong_in_the_imaginary_direction_is_caught():
    # Right along real tangents, wrong along imaginary ones.
    f = _square_with_jvp(lambda z, t: 2 * z * lax.complex(lax.real(t), np.float32(0)))
    with pytest.raises(AssertionError, match="jvp vs finite differences"):
        check_jvp(f, (Z,))


def test_a_jvp_with_a_wrong_imaginary_part_is_caught():
    f = _square_with_jvp(lambda z, t: lax.conj(2 * z * t))
    with pytest.raises(AssertionError, match="jvp vs finite differences"):
        check_jvp(f, (Z,))


def test_a_transpose_that_conjugates_is_caught():
    check_vjp(_scale_by_c("check_grads_scale_ok", C).bind, (Z,))
    with pytest.raises(AssertionError, match="dot-product test"):
        check_vjp(_scale_by_c("check_grads_scale_conjugated", np.conj(C)).bind, (Z,))
