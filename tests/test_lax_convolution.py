"""Convolutions: `conv_general_dilated` against a NumPy reference (layouts, strides,
padding, both dilations, feature and batch groups, dtypes, empty shapes), its
derivatives with respect to both operands (orders 1 and 2, both modes), batching
of either or both operands against a loop, the wrappers (`conv`, `conv_transpose`,
`conv_general_dilated_patches`, the shape helpers), `jnp.convolve`/`jnp.correlate`
against NumPy, errors, and JAX as the reference."""
import ml_dtypes
import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax import lax
from plax import numpy as jnp
from plax.test_util import check_grads

RNG = np.random.default_rng(0)


def normal(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def np_conv(lhs, rhs, strides, padding, lhs_dilation, rhs_dilation, fgc=1, bgc=1):
    """The definition, in the canonical (N, C, spatial...) / (O, I, spatial...) layout:
    zeros between dilated elements, then each output sums its window's products."""
    lhs, rhs = np.asarray(lhs, np.float64), np.asarray(rhs, np.float64)
    dil = np.zeros(lhs.shape[:2] + tuple((d - 1) * r + 1 if d else 0 for d, r
                                         in zip(lhs.shape[2:], lhs_dilation)))
    dil[(slice(None),) * 2 + tuple(slice(None, None, r) for r in lhs_dilation)] = lhs
    for axis, (lo, hi) in enumerate(padding, 2):
        dil = np.moveaxis(dil, axis, 0)
        dil = dil[max(-lo, 0):dil.shape[0] - max(-hi, 0)]
        dil = np.concatenate([np.zeros((max(lo, 0),) + dil.shape[1:]), dil,
                              np.zeros((max(hi, 0),) + dil.shape[1:])])
        dil = np.moveaxis(dil, 0, axis)
    kernel = rhs.shape[2:]
    eff = [(k - 1) * r + 1 for k, r in zip(kernel, rhs_dilation)]
    out_sp = [max((p - e) // s + 1, 0) for p, e, s in zip(dil.shape[2:], eff, strides)]
    n, (o, i) = lhs.shape[0], rhs.shape[:2]
    out = np.zeros((n // bgc, o) + tuple(out_sp))
    groups = max(fgc, bgc)
    for y in np.ndindex(*out_sp):
        for k in np.ndindex(*kernel):
            pos = tuple(yy * s + kk * r for yy, kk, s, r in zip(y, k, strides, rhs_dilation))
            window = dil[(slice(None), slice(None)) + pos]  # (N, C)
            w = rhs[(slice(None), slice(None)) + k]  # (O, I)
            for g in range(groups):
                outs = slice(g * o // groups, (g + 1) * o // groups)
                if fgc > 1:
                    part = window[:, g * i:(g + 1) * i] @ w[outs].T
                elif bgc > 1:
                    part = window[g * (n // bgc):(g + 1) * (n // bgc)] @ w[outs].T
                else:
                    part = window @ w.T
                out[(slice(None), outs) + y] += part
    return out


CASES = [  # lhs shape (NCHW), rhs shape (OIHW), strides, padding, lhs_dil, rhs_dil, fgc, bgc
    ((2, 3, 6, 5), (4, 3, 3, 2), (1, 1), ((1, 1), (0, 1)), (1, 1), (1, 1), 1, 1),
    ((2, 3, 7, 6), (4, 3, 2, 3), (2, 1), ((1, 2), (-1, 1)), (1, 2), (2, 1), 1, 1),
    ((1, 6, 5, 5), (9, 2, 3, 3), (1, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), 3, 1),
    ((4, 3, 5, 4), (6, 3, 2, 2), (1, 1), ((0, 0), (1, 0)), (2, 1), (1, 2), 1, 2),
    ((2, 2, 5), (3, 2, 3), (2,), ((2, 1),), (1,), (2,), 1, 1),
]


def _args(case):
    lhs_shape, rhs_shape, strides, padding, ld, rd, fgc, bgc = case
    return normal(*lhs_shape), normal(*rhs_shape), dict(
        window_strides=strides, padding=padding, lhs_dilation=ld, rhs_dilation=rd,
        feature_group_count=fgc, batch_group_count=bgc)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_against_numpy(case):
    lhs, rhs, params = _args(case)
    got = lax.conv_general_dilated(lhs, rhs, **params, precision="highest")
    want = np_conv(lhs, rhs, params["window_strides"], params["padding"],
                   params["lhs_dilation"], params["rhs_dilation"],
                   params["feature_group_count"], params["batch_group_count"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_layouts_agree():
    lhs, rhs = normal(2, 3, 6, 5), normal(4, 3, 3, 2)
    nchw = lax.conv_general_dilated(lhs, rhs, (2, 1), "SAME")
    nhwc = lax.conv_general_dilated(lhs.transpose(0, 2, 3, 1), rhs.transpose(2, 3, 1, 0),
                                    (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    np.testing.assert_allclose(nhwc.transpose(0, 3, 1, 2), nchw, rtol=1e-6)
    # Spatial dimensions pair by letter, ordered as in the kernel's string.
    dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, ("NCWH", "OIWH", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 3, 2, 1))
    swapped = lax.conv_general_dilated(lhs, rhs, (2, 1), "SAME", dimension_numbers=dn)
    np.testing.assert_allclose(swapped, nchw.transpose(0, 3, 2, 1), rtol=1e-6)
    assert lax.conv_general_permutations(("NHWC", "HWIO", "NHWC")) == (
        (0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))


def test_dtypes_and_preferred_element_type():
    lhs, rhs = normal(1, 2, 5, 4), normal(3, 2, 2, 2)
    want = np_conv(lhs, rhs, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1))
    for dtype, tol in ((np.float16, 1e-2), (ml_dtypes.bfloat16, 5e-2), (np.complex64, 1e-5)):
        got = lax.conv(lhs.astype(dtype), rhs.astype(dtype), (1, 1), "VALID")
        assert got.dtype == dtype
        np.testing.assert_allclose(np.asarray(got).astype(np.complex128), want, rtol=tol,
                                   atol=tol)
    ints_l = RNG.integers(-3, 4, (1, 2, 5, 4)).astype(np.int8)
    ints_r = RNG.integers(-3, 4, (3, 2, 2, 2)).astype(np.int8)
    got = lax.conv(ints_l, ints_r, (1, 1), "VALID", preferred_element_type=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np_conv(ints_l, ints_r, (1, 1), ((0, 0),) * 2, (1, 1),
                                               (1, 1)))
    got = lax.conv(lhs.astype(np.float16), rhs.astype(np.float16), (1, 1), "VALID",
                   preferred_element_type=np.float32)
    assert got.dtype == np.float32
    z = (lhs + 1j * lhs[:, ::-1]).astype(np.complex64)
    np.testing.assert_allclose(lax.conv(z, rhs.astype(np.complex64), (1, 1), "SAME"),
                               np_conv(z.real, rhs, (1, 1), ((0, 1), (0, 1)), (1, 1), (1, 1))
                               + 1j * np_conv(z.imag, rhs, (1, 1), ((0, 1), (0, 1)), (1, 1),
                                              (1, 1)), rtol=1e-5, atol=1e-5)


def test_empty_shapes():
    assert lax.conv(np.zeros((0, 2, 4, 4), np.float32), normal(3, 2, 2, 2), (1, 1),
                    "VALID").shape == (0, 3, 3, 3)
    out = lax.conv(normal(2, 0, 4, 4), np.zeros((3, 0, 2, 2), np.float32), (1, 1), "VALID")
    np.testing.assert_array_equal(out, np.zeros((2, 3, 3, 3)))
    assert lax.conv(normal(1, 2, 2, 2), normal(3, 2, 3, 3), (1, 1), "VALID").shape == (1, 3,
                                                                                       0, 0)
    g = plax.grad(lambda w: jnp.sum(lax.conv(normal(1, 2, 2, 2), w, (1, 1), "VALID")))(
        normal(3, 2, 3, 3))
    np.testing.assert_array_equal(g, np.zeros((3, 2, 3, 3)))


def test_no_spatial_dimensions_is_a_matrix_product():
    lhs, rhs = normal(2, 3), normal(4, 3)
    np.testing.assert_allclose(lax.conv_general_dilated(lhs, rhs, (), []), lhs @ rhs.T,
                               rtol=1e-6)
    check_grads(plax.jit(lambda x, r: lax.conv_general_dilated(x, r, (), [])), (lhs, rhs),
                order=1)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_derivatives_with_respect_to_both_operands(case):
    lhs, rhs, params = _args(case)
    check_grads(plax.jit(lambda x, r: lax.conv_general_dilated(x, r, **params)), (lhs, rhs),
                order=2, atol=5e-2, rtol=5e-2)


def test_derivatives_in_float64_and_other_layouts():
    with plax.enable_x64(True):
        lhs, rhs = normal(2, 5, 4, 3, dtype=np.float64), normal(2, 2, 1, 6, dtype=np.float64)
        check_grads(plax.jit(lambda x, r: lax.conv_general_dilated(
            x, r, (1, 2), "SAME", rhs_dilation=(2, 1), feature_group_count=3,
            dimension_numbers=("NHWC", "HWIO", "NHWC"))), (lhs, rhs), order=2)


@pytest.mark.parametrize("groups", [dict(), dict(feature_group_count=3),
                                    dict(batch_group_count=2)], ids=str)
def test_batching_of_either_and_both_operands(groups):
    fgc = groups.get("feature_group_count", 1)
    lhs, rhs = normal(3, 4, 3 * fgc, 5, 4), normal(3, 6, 3, 2, 3)

    def f(x, r):
        return lax.conv_general_dilated(x, r, (1, 2), "SAME", rhs_dilation=(1, 2), **groups)

    for in_axes, out_axes in (((0, 0), 0), ((0, None), 1), ((None, 0), 0), ((2, 1), 3)):
        x = np.moveaxis(lhs, 0, in_axes[0]) if in_axes[0] is not None else lhs[0]
        r = np.moveaxis(rhs, 0, in_axes[1]) if in_axes[1] is not None else rhs[0]
        got = plax.jit(plax.vmap(f, in_axes, out_axes))(x, r)
        want = np.stack([f(lhs[b] if in_axes[0] is not None else x,
                           rhs[b] if in_axes[1] is not None else r) for b in range(3)],
                        out_axes)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=str(in_axes))
    assert plax.vmap(f)(lhs[:0], rhs[:0]).shape == (0,) + f(lhs[0], rhs[0]).shape


def test_per_example_gradients_and_jacobians():
    lhs, rhs = normal(3, 1, 2, 5, 5), normal(4, 2, 3, 3)

    def loss(r, x):
        return jnp.sum(jnp.tanh(lax.conv(x, r, (1, 1), "SAME")))

    per_example = plax.jit(plax.vmap(plax.grad(loss), (None, 0)))(rhs, lhs)
    want = np.stack([plax.jit(plax.grad(loss))(rhs, x) for x in lhs])
    np.testing.assert_allclose(per_example, want, rtol=1e-5, atol=1e-5)
    jac = plax.jit(plax.jacfwd(lambda r: lax.conv(lhs[0], r, (2, 2), "VALID")))(rhs)
    np.testing.assert_allclose(jac, plax.jit(plax.jacrev(
        lambda r: lax.conv(lhs[0], r, (2, 2), "VALID")))(rhs), rtol=1e-5, atol=1e-5)


def test_conv_transpose_is_the_gradient_of_conv():
    x, k = normal(2, 6, 5, 3), normal(3, 2, 3, 4)  # NHWC, HWIO
    dn = ("NHWC", "HWIO", "NHWC")
    for padding, strides in (("SAME", (2, 2)), ("VALID", (1, 1)), ("VALID", (3, 1))):
        def forward(x, strides=strides, padding=padding):
            return lax.conv_general_dilated(x, k, strides, padding, dimension_numbers=dn)
        y = forward(x)
        ct = normal(*y.shape)
        _, vjp = plax.vjp(forward, x)
        got = lax.conv_transpose(ct, k, strides, padding, dimension_numbers=dn,
                                 transpose_kernel=True)
        want = vjp(ct)[0]
        # Keras's output size may exceed the input by the stride's remainder.
        np.testing.assert_allclose(got[:, :x.shape[1], :x.shape[2]], want, rtol=1e-4,
                                   atol=1e-4)
    out = lax.conv_transpose(normal(1, 4, 4, 2), normal(3, 3, 2, 5), (2, 2), "SAME")
    assert out.shape == (1, 8, 8, 5) == lax.conv_transpose_shape_tuple(
        (1, 4, 4, 2), (3, 3, 2, 5), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC"))
    consistent = lax.conv_transpose(normal(1, 4, 4, 2), normal(3, 3, 2, 5), (2, 2),
                                    ((1, 1), (1, 1)), use_consistent_padding=True)
    assert consistent.shape == (1, 7, 7, 5)


def test_shape_helpers_and_patches():
    assert lax.conv_shape_tuple((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), "SAME") == (2, 4, 4, 6)
    assert lax.conv_general_shape_tuple((2, 7, 6, 3), (3, 2, 3, 4), (1, 1), "VALID",
                                        ("NHWC", "HWIO", "NHWC")) == (2, 5, 5, 4)
    x = normal(2, 3, 5, 4)
    patches = lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID")
    assert patches.shape == (2, 18, 4, 2)
    np.testing.assert_array_equal(patches[1, 2 * 6 + 1 * 3 + 2, 3, 1], x[1, 2, 3 + 1, 1 + 2])


def test_errors():
    lhs, rhs = normal(2, 3, 6, 5), normal(4, 3, 3, 2)
    with pytest.raises(TypeError, match="ndim to be equal"):
        lax.conv_general_dilated(lhs, rhs[0], (1, 1), "SAME")
    with pytest.raises(TypeError, match="exactly once"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME",
                                 dimension_numbers=("NCHW", "OHWW", "NCHW"))
    with pytest.raises(TypeError, match="duplicate characters"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME",
                                 dimension_numbers=("NCHH", "OIHW", "NCHW"))
    with pytest.raises(TypeError, match="same set of spatial characters"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME",
                                 dimension_numbers=("NCHW", "OIHX", "NCHW"))
    with pytest.raises(ValueError, match="rhs input feature dimension size"):
        lax.conv_general_dilated(lhs, normal(4, 2, 3, 2), (1, 1), "SAME")
    with pytest.raises(ValueError, match="feature_group_count must divide"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME", feature_group_count=2)
    with pytest.raises(ValueError, match="batch_group_count must divide"):
        lax.conv_general_dilated(normal(3, 3, 6, 5), rhs, (1, 1), "SAME", batch_group_count=2)
    with pytest.raises(ValueError, match="At most one"):
        lax.conv_general_dilated(normal(2, 6, 6, 5), normal(4, 3, 3, 2), (1, 1), "SAME",
                                 feature_group_count=2, batch_group_count=2)
    with pytest.raises(ValueError, match="one entry per spatial dimension"):
        lax.conv_general_dilated(lhs, rhs, (1,), "SAME")
    with pytest.raises(ValueError, match="String padding is not implemented"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME", lhs_dilation=(2, 1))
    with pytest.raises(ValueError, match="sequence of \\(low, high\\) pairs"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), [1, 2])
    with pytest.raises(RuntimeError, match="Unrecognized padding type"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), "FULL")
    with pytest.raises(TypeError, match="same dtype"):
        lax.conv_general_dilated(lhs, rhs.astype(np.float16), (1, 1), "SAME")
    with pytest.raises(TypeError, match="does not accept dtype bool"):
        lax.conv_general_dilated(lhs > 0, rhs > 0, (1, 1), "SAME")
    with pytest.raises(TypeError, match="narrower"):
        lax.conv(lhs, rhs, (1, 1), "SAME", preferred_element_type=np.float16)
    with pytest.raises(ValueError, match="Negative padding|removes more"):
        lax.conv_general_dilated(lhs, rhs, (1, 1), ((-4, -3), (0, 0)))


# --- jnp.convolve / jnp.correlate ---------------------------------------------------------------

@pytest.mark.parametrize("op", ["convolve", "correlate"])
def test_numpy_convolve_and_correlate(op):
    for n, m in ((7, 3), (3, 7), (5, 5), (1, 4), (6, 1)):
        a, v = RNG.standard_normal(n), RNG.standard_normal(m)
        for mode in ("full", "same", "valid"):
            got = getattr(jnp, op)(a.astype(np.float32), v.astype(np.float32), mode)
            want = getattr(np, op)(a, v, mode)
            assert got.shape == want.shape and got.dtype == np.float32
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    a = (RNG.standard_normal(5) + 1j * RNG.standard_normal(5)).astype(np.complex64)
    v = (RNG.standard_normal(3) + 1j * RNG.standard_normal(3)).astype(np.complex64)
    for x, y in ((a, v), (v, a)):
        np.testing.assert_allclose(getattr(jnp, op)(x, y, "full"), getattr(np, op)(x, y, "full"),
                                   rtol=1e-5, atol=1e-5)
    ints = getattr(jnp, op)(np.arange(4), np.arange(3))
    assert ints.dtype == np.float32  # promoted to floating point unless asked otherwise
    exact = getattr(jnp, op)(np.arange(4), np.arange(3), preferred_element_type=np.int32)
    np.testing.assert_array_equal(exact, getattr(np, op)(np.arange(4), np.arange(3)))
    check_grads(plax.jit(lambda a, v: getattr(jnp, op)(a, v, "same")),
                (normal(6), normal(3)), order=1)
    with pytest.raises(ValueError, match="1-dimensional"):
        getattr(jnp, op)(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="cannot be empty"):
        getattr(jnp, op)(np.ones(0), np.ones(2))
    with pytest.raises(ValueError, match="mode must be one of"):
        getattr(jnp, op)(np.ones(3), np.ones(2), "wide")


@requires_jax
def test_against_jax():
    body = """
    x, w, wg = inputs["x"], inputs["w"], inputs["wg"]
    dn = ("NHWC", "HWIO", "NHWC")
    conv = lambda x, w: lax.conv_general_dilated(x, w, (2, 1), [(1, 2), (0, 1)], (1, 2), (2, 1),
                                                 dimension_numbers=dn)
    results["conv"] = conv(x, w)
    results["same"] = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=dn)
    results["same_lower"] = lax.conv_general_dilated(x, w, (2, 2), "SAME_LOWER",
                                                     dimension_numbers=dn)
    grouped = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn,
                                                    feature_group_count=2)
    results["grouped"] = grouped(x, wg)
    bg = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=dn,
                                               batch_group_count=2)
    results["batch_grouped"] = bg(x, inputs["wb"])
    loss = lambda x, w: jnp.sum(jnp.sin(conv(x, w)))
    results["grad_x"], results["grad_w"] = lib.grad(loss, (0, 1))(x, w)
    gl = lambda x, w: jnp.sum(jnp.sin(grouped(x, w)))
    results["ggrad_x"], results["ggrad_w"] = lib.grad(gl, (0, 1))(x, wg)
    bl = lambda x, w: jnp.sum(jnp.sin(bg(x, w)))
    results["bgrad_x"], results["bgrad_w"] = lib.grad(bl, (0, 1))(x, inputs["wb"])
    results["vmap_w"] = lib.vmap(lambda w: grouped(x, w))(jnp.stack([wg, -wg]))
    results["transpose"] = lax.conv_transpose(x, inputs["wt"], (2, 2), "SAME",
                                              dimension_numbers=dn, transpose_kernel=True)
    results["patches"] = lax.conv_general_dilated_patches(
        jnp.transpose(x, (0, 3, 1, 2)), (2, 2), (1, 2), "SAME")
    results["convolve"] = jnp.convolve(inputs["a"], inputs["v"], "same")
    results["correlate"] = jnp.correlate(inputs["v"], inputs["a"], "full")
    """
    inputs = {"x": normal(2, 6, 5, 4), "w": normal(3, 2, 4, 6), "wg": normal(3, 3, 2, 6),
              "wb": normal(2, 2, 4, 6), "wt": normal(3, 3, 4, 4), "a": normal(7),
              "v": normal(3)}
    assert_same_as_jax(body, inputs, rtol=1e-4, atol=1e-4)
