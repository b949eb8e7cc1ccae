"""Windowed reductions: `lax.reduce_window` with the monoids and with Python reducers
(variadic ones too) against a NumPy reference; their derivatives in both modes
(reverse mode for generic reducers included: plax goes beyond JAX there) against
finite differences and against the monoid primitives; batching against a loop;
select_and_gather_add/select_and_scatter_add; errors; and JAX as the reference."""
import itertools

import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax import lax
from plax import numpy as jnp
from plax.test_util import check_grads

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 6)).astype(np.float32)
X3 = RNG.standard_normal((2, 5, 4)).astype(np.float32)


def np_reduce_window(x, init, op, dims, strides=None, padding="VALID", base=None,
                     wdil=None):
    """The definition: dilate (holes and padding hold `init`), then fold each window
    from `init` in row-major order."""
    x = np.asarray(x)
    nd = x.ndim
    strides, base, wdil = (v or (1,) * nd for v in (strides, base, wdil))
    if isinstance(padding, str):
        padding = lax.padtype_to_pads(x.shape, [(w - 1) * r + 1 for w, r in zip(dims, wdil)],
                                      strides, padding)
    dilated = np.full([(d - 1) * b + 1 if d else 0 for d, b in zip(x.shape, base)], init,
                      x.dtype)
    dilated[tuple(slice(None, None, b) for b in base)] = x
    for axis, (lo, hi) in enumerate(padding):
        dilated = np.moveaxis(dilated, axis, 0)
        dilated = dilated[max(-lo, 0):dilated.shape[0] - max(-hi, 0)]
        block = np.full((max(lo, 0),) + dilated.shape[1:], init, x.dtype)
        after = np.full((max(hi, 0),) + dilated.shape[1:], init, x.dtype)
        dilated = np.moveaxis(np.concatenate([block, dilated, after]), 0, axis)
    out_shape = [max((p - ((w - 1) * r + 1)) // s + 1, 0)
                 for p, w, r, s in zip(dilated.shape, dims, wdil, strides)]
    out = np.empty(out_shape, x.dtype)
    for o in np.ndindex(*out_shape):
        acc = np.asarray(init, x.dtype)
        for k in np.ndindex(*dims):
            acc = op(acc, dilated[tuple(oi * s + ki * r for oi, ki, s, r
                                        in zip(o, k, strides, wdil))])
        out[o] = acc
    return out


def hand_max(a, b):
    return lax.select(a >= b, a, b)


def soft_sum(a, b):
    """Associative and commutative, identity 0, no lax monoid: (1+a)(1+b) - 1."""
    return a + b + a * b


WINDOWS = [  # window_dimensions, strides, padding, base_dilation, window_dilation
    ((2, 3), (1, 2), "VALID", None, None),
    ((2, 2), (2, 1), "SAME", None, None),
    ((3, 2), (1, 1), "SAME_LOWER", None, (1, 2)),
    ((2, 2), (2, 3), ((1, 0), (2, 1)), (2, 1), (1, 2)),
    ((1, 3), (1, 1), ((0, 0), (-1, 2)), None, None),
]


def _param_id(value) -> str:
    """A test id that is the same in every process (functions by name, not address),
    so pytest-xdist workers collect identical tests."""
    return getattr(value, "__name__", None) or str(value)


@pytest.mark.parametrize("window", WINDOWS, ids=_param_id)
def test_monoids_match_numpy(window):
    dims, strides, padding, base, wdil = window
    for computation, init, ref in ((lax.add, 0.0, np.add), (lax.max, -np.inf, np.maximum),
                                   (lax.min, np.inf, np.minimum)):
        got = lax.reduce_window(X, init, computation, dims, strides, padding, base, wdil)
        want = np_reduce_window(X, init, ref, dims, strides, padding, base, wdil)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=str(computation))


def test_monoids_bind_their_primitives_and_others_the_generic_one():
    def prims(f):
        return [e.primitive.name for e in plax.make_jaxpr(f)(X).eqns]
    assert prims(lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2))) == ["reduce_window_sum"]
    assert prims(lambda x: lax.reduce_window(x, -np.inf, lambda a, b: lax.max(a, b),
                                             (2, 2))) == ["reduce_window_max"]
    assert prims(lambda x: lax.reduce_window(x, np.inf, jnp.minimum, (2, 2))) == [
        "reduce_window_min"]
    # A non-identity initial value, a product or a Python reducer: generic.
    assert prims(lambda x: lax.reduce_window(x, 1.0, lax.add, (2, 2))) == ["reduce_window"]
    assert prims(lambda x: lax.reduce_window(x, 1.0, lax.mul, (2, 2))) == ["reduce_window"]
    assert prims(lambda x: lax.reduce_window(x, -np.inf, hand_max, (2, 2))) == [
        "reduce_window"]


@pytest.mark.parametrize("window", WINDOWS[:4], ids=_param_id)
def test_generic_reducers_match_numpy(window):
    dims, strides, padding, base, wdil = window
    x = X / 4
    for computation, init, ref in ((soft_sum, 0.0, lambda a, b: a + b + a * b),
                                   (lax.mul, 1.0, np.multiply),
                                   (hand_max, -np.inf, np.maximum)):
        got = lax.reduce_window(x, init, computation, dims, strides, padding, base, wdil)
        want = np_reduce_window(x, init, ref, dims, strides, padding, base, wdil)
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=str(computation))


def test_integer_and_boolean_reductions():
    ints = RNG.integers(-9, 9, (4, 5)).astype(np.int32)
    bools = ints > 0
    cases = [(ints, 0, lax.add, np.add), (ints, np.iinfo(np.int32).min, lax.max, np.maximum),
             (ints, 1, lax.mul, np.multiply), (ints, -1, lax.bitwise_and, np.bitwise_and),
             (bools, False, lax.bitwise_or, np.logical_or),
             (bools, True, lax.bitwise_and, np.logical_and), (bools, False, lax.max, np.maximum)]
    for x, init, computation, ref in cases:
        got = lax.reduce_window(x, init, computation, (2, 2), (1, 2), "SAME")
        want = np_reduce_window(x, init, ref, (2, 2), (1, 2), "SAME")
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, want)


def test_narrow_floats_and_empty_operands():
    import ml_dtypes
    for dtype in (np.float16, ml_dtypes.bfloat16):
        x = X.astype(dtype)
        got = lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "SAME")
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, np_reduce_window(x, -np.inf, np.maximum, (2, 2),
                                                            (1, 1), "SAME"))
    empty = np.zeros((0, 3), np.float32)
    assert lax.reduce_window(empty, 0.0, lax.add, (1, 2)).shape == (0, 2)
    assert lax.reduce_window(empty, 0.0, soft_sum, (1, 2)).shape == (0, 2)
    # Windows larger than the operand: no windows.
    assert lax.reduce_window(X, -np.inf, hand_max, (5, 1)).shape == (0, 6)
    # All padding: every window holds only the initial value.
    np.testing.assert_array_equal(
        lax.reduce_window(empty, 0.0, lax.add, (1, 1), padding=((1, 1), (0, 0))),
        np.zeros((2, 3), np.float32))


def _sum_of(f):
    return lambda x: jnp.sum(f(x))


@pytest.mark.parametrize("computation,init", [(lax.add, 0.0), (lax.max, -np.inf),
                                              (hand_max, -np.inf)], ids=_param_id)
def test_degenerate_windows(computation, init):
    """Rank 0, windows cropped by negative padding, windows of padding only: cases
    where XLA's own passes fail (JAX aborts on the first two) are computed too."""
    scalar = np.float32(3.0)
    assert lax.reduce_window(scalar, init, computation, ()) == 3.0
    assert plax.grad(lambda x: lax.reduce_window(x, init, computation, ()))(scalar) == 1.0
    x = np.arange(3, dtype=np.float32)

    def cropped(x):
        return lax.reduce_window(x, init, computation, (1,), (1,), [(-1, -1)])
    np.testing.assert_array_equal(cropped(x), [1.0])
    np.testing.assert_array_equal(plax.grad(_sum_of(cropped))(x), [0, 1, 0])

    def padded(x):
        return lax.reduce_window(x, init, computation, (3,), (1,), [(5, 5)])
    ref = np.add if computation is lax.add else np.maximum
    np.testing.assert_array_equal(padded(x), np_reduce_window(x, init, ref, (3,), (1,),
                                                              [(5, 5)]))
    want = [3, 3, 3] if computation is lax.add else [1, 1, 3]
    np.testing.assert_array_equal(plax.grad(_sum_of(padded))(x), want)


def argmax_reducer(a, b):
    """(value, index) pairs: the larger value, the lower index on ties."""
    (av, ai), (bv, bi) = a, b
    pick = (av > bv) | ((av == bv) & (ai < bi))
    return lax.select(pick, av, bv), lax.select(pick, ai, bi)


def windowed_argmax(x):
    index = lax.broadcasted_iota(np.int32, x.shape, 1)
    return lax.reduce_window((x, index), (-np.inf, np.int32(2 ** 31 - 1)), argmax_reducer,
                             (1, 3), (1, 3), "VALID")


def test_variadic_argmax():
    values, indices = windowed_argmax(X)
    blocks = X.reshape(4, 2, 3)
    np.testing.assert_array_equal(values, blocks.max(-1))
    np.testing.assert_array_equal(indices, blocks.argmax(-1) + np.array([0, 3]))
    assert indices.dtype == np.int32
    # A pytree of operands comes back in its structure.
    out = lax.reduce_window({"v": X, "i": lax.broadcasted_iota(np.int32, X.shape, 1)},
                            {"v": -np.inf, "i": np.int32(2 ** 31 - 1)},
                            lambda a, b: dict(zip(("v", "i"), argmax_reducer(
                                (a["v"], a["i"]), (b["v"], b["i"])))), (1, 3), (1, 3))
    np.testing.assert_array_equal(out["i"], indices)


# --- derivatives ---------------------------------------------------------------------------

BASE_DILATED = ((2, 2), (1, 2), "SAME", (2, 1), None)


@pytest.mark.parametrize("computation,init,window", [
    (lax.add, 0.0, WINDOWS[0]), (lax.add, 0.0, WINDOWS[3]), (lax.add, 0.0, WINDOWS[4]),
    (lax.max, -np.inf, WINDOWS[1]), (lax.max, -np.inf, BASE_DILATED),
    (lax.max, -np.inf, WINDOWS[2]), (lax.min, np.inf, WINDOWS[3])], ids=_param_id)
def test_monoid_derivatives(computation, init, window):
    dims, strides, padding, base, wdil = window
    check_grads(plax.jit(lambda x: lax.reduce_window(x, init, computation, dims, strides,
                                                     padding, base, wdil)), (X,), order=2)


@pytest.mark.parametrize("computation,init,window", [
    (soft_sum, 0.0, WINDOWS[3]), (hand_max, -np.inf, WINDOWS[2]), (lax.mul, 1.0, WINDOWS[1])],
    ids=_param_id)
def test_generic_derivatives_both_modes(computation, init, window):
    dims, strides, padding, base, wdil = window
    check_grads(plax.jit(lambda x: lax.reduce_window(x / 4, init, computation, dims, strides,
                                                     padding, base, wdil)), (X,), order=2)


def test_generic_max_equals_the_monoid_in_every_mode():
    def hand(x):
        return lax.reduce_window(x, -np.inf, hand_max, (2, 3), (1, 2), "SAME")

    def monoid(x):
        return lax.reduce_window(x, -np.inf, lax.max, (2, 3), (1, 2), "SAME")

    def loss(f):
        return lambda x: jnp.sum(jnp.sin(f(x)))

    def both(transform):
        return [plax.jit(transform(f))(X) for f in (hand, monoid)]

    np.testing.assert_allclose(*both(lambda f: plax.grad(loss(f))), rtol=1e-6)
    np.testing.assert_allclose(plax.grad(loss(hand))(X), plax.grad(loss(monoid))(X), rtol=1e-6)
    np.testing.assert_allclose(*both(plax.jacfwd))
    np.testing.assert_allclose(*both(plax.jacrev))
    ct = RNG.standard_normal(hand(X).shape).astype(np.float32)
    np.testing.assert_allclose(*both(lambda f: lambda x: plax.vjp(f, x)[1](ct)[0]))
    np.testing.assert_allclose(*both(lambda f: plax.hessian(loss(f))), rtol=1e-5, atol=1e-6)
    # Ties (here: constant rows) pick one element, like the monoid's derivative.
    tied = np.ones((2, 4), np.float32)
    g_hand = plax.grad(lambda x: jnp.sum(lax.reduce_window(x, -np.inf, hand_max, (1, 2))))(tied)
    # Each of the three windows per row passes its cotangent to its first element.
    np.testing.assert_array_equal(g_hand, [[1, 1, 1, 0]] * 2)


def test_generic_jacobians_match_finite_differences():
    def f(x):
        return lax.reduce_window(x / 4, 0.0, soft_sum, (2, 2), (1, 2), "SAME")

    x = X.astype(np.float64)
    with plax.enable_x64(True):
        jac_fwd, jac_rev = plax.jit(plax.jacfwd(f))(x), plax.jit(plax.jacrev(f))(x)
        eps = 1e-6
        fd = np.stack([(np.asarray(f(x + eps * e)) - np.asarray(f(x - eps * e))) / (2 * eps)
                       for e in np.eye(x.size).reshape(x.size, *x.shape)], axis=-1)
    np.testing.assert_allclose(jac_fwd, fd.reshape(jac_fwd.shape), atol=1e-7)
    np.testing.assert_allclose(jac_rev, jac_fwd, atol=1e-12)


def test_variadic_derivatives():
    check_grads(plax.jit(lambda x: windowed_argmax(x)[0]), (X,), order=2)
    g = plax.jit(plax.grad(lambda x: jnp.sum(windowed_argmax(x)[0])))(X)
    blocks = X.reshape(4, 2, 3)
    want = (blocks == blocks.max(-1, keepdims=True)).astype(np.float32).reshape(X.shape)
    np.testing.assert_array_equal(g, want)


def test_complex_generic_reducer_derivatives():
    z = (X + 1j * X[::-1]).astype(np.complex64) / 4
    # Associative but not holomorphic (real parts enter): exact in both modes.
    check_grads(plax.jit(lambda z: lax.reduce_window(
        z, 0j, lambda a, b: a + b + jnp.real(a) * jnp.real(b), (2, 2), (1, 1))), (z,), order=2)


def test_nonzero_init_tangent_is_a_type_error():
    with pytest.raises(TypeError, match="init_value tangents"):
        plax.jvp(lambda i: lax.reduce_window(X, i, soft_sum, (2, 2)), (0.0,), (1.0,))


# --- batching ------------------------------------------------------------------------------

def _stack_over(f, *args, axes):
    return np.stack([np.asarray(f(*(a if ax is None else np.take(a, i, ax)
                                    for a, ax in zip(args, axes))))
                     for i in range(next(np.shape(a)[ax] for a, ax in zip(args, axes)
                                         if ax is not None))])


def test_batching_matches_a_loop():
    fns = [lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 2), "SAME", (1, 2)),
           lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 1), (1, 1), "SAME"),
           lambda x: lax.reduce_window(x / 4, 0.0, soft_sum, (2, 2), (1, 1), "VALID"),
           lambda x: windowed_argmax(x)[1]]
    for f, axis in itertools.product(fns, (0, 2)):
        np.testing.assert_allclose(plax.jit(plax.vmap(f, in_axes=axis))(X3),
                                   _stack_over(plax.jit(f), X3, axes=(axis,)), rtol=1e-6)


def test_batched_initial_values():
    def f(x, init):
        return lax.reduce_window(x, init, soft_sum, (2, 2))
    inits = np.zeros(2, np.float32)
    np.testing.assert_allclose(plax.vmap(f)(X3 / 4, inits),
                               _stack_over(f, X3 / 4, inits, axes=(0, 0)), rtol=1e-6)
    np.testing.assert_allclose(plax.vmap(f, in_axes=(None, 0))(X / 4, inits),
                               np.stack([f(X / 4, 0.0)] * 2), rtol=1e-6)


def test_batched_derivatives():
    def f(x):
        return lax.reduce_window(x, -np.inf, hand_max, (2, 2), (1, 1), "SAME")
    grad = plax.grad(lambda x: jnp.sum(f(x) ** 2))
    grads = plax.jit(plax.vmap(grad))(X3)
    want = np.stack([plax.jit(grad)(x) for x in X3])
    np.testing.assert_allclose(grads, want, rtol=1e-6)


# --- select_and_gather_add / select_and_scatter_add ------------------------------------------

def test_select_and_gather_add_and_scatter_add():
    t = RNG.standard_normal(X.shape).astype(np.float32)
    gathered = lax.select_and_gather_add(t, X, lax.ge_p, (2, 2), (2, 2), "VALID")
    blocks = X.reshape(2, 2, 3, 2).transpose(0, 2, 1, 3).reshape(2, 3, 4)
    t_blocks = t.reshape(2, 2, 3, 2).transpose(0, 2, 1, 3).reshape(2, 3, 4)
    picked = blocks.argmax(-1)
    np.testing.assert_array_equal(gathered, np.take_along_axis(t_blocks, picked[..., None],
                                                               -1)[..., 0])
    source = RNG.standard_normal((2, 3)).astype(np.float32)
    scattered = lax.select_and_scatter_add(source, X, lax.ge_p, (2, 2), (2, 2), "VALID")
    want = np.zeros_like(blocks)
    np.put_along_axis(want, picked[..., None], source[..., None], -1)
    np.testing.assert_array_equal(scattered, want.reshape(2, 3, 2, 2).transpose(0, 2, 1, 3)
                                  .reshape(X.shape))
    # Both are linear in their first argument, transposes of each other.
    check_grads(lambda t: lax.select_and_gather_add(t, X, lax.le_p, (2, 3), (1, 2), "SAME"),
                (t,), order=2)
    check_grads(lambda s: lax.select_and_scatter_add(s, X, lax.le_p, (2, 3), (1, 2), "SAME"),
                (RNG.standard_normal((4, 3)).astype(np.float32),), order=2)
    for f, arg in ((lambda t: lax.select_and_gather_add(t, X, lax.ge_p, (2, 2), (1, 2), "SAME"),
                    t),
                   (lambda s: lax.select_and_scatter_add(s, X, lax.ge_p, (2, 2), (1, 1),
                                                         "VALID"),
                    RNG.standard_normal((3, 5)).astype(np.float32))):
        stacked = np.stack([arg, -arg])
        np.testing.assert_allclose(plax.vmap(f)(stacked), np.stack([f(arg), f(-arg)]))


def test_errors():
    with pytest.raises(TypeError, match="wrong number of window_dimensions"):
        lax.reduce_window(X, 0.0, lax.add, (2,))
    with pytest.raises(TypeError, match="strictly positive"):
        lax.reduce_window(X, 0.0, lax.add, (0, 2))
    with pytest.raises(TypeError, match="inconsistent window_strides"):
        lax.reduce_window(X, 0.0, lax.add, (2, 2), (1,))
    with pytest.raises(RuntimeError, match="Unrecognized padding type"):
        lax.reduce_window(X, 0.0, lax.add, (2, 2), padding="FULL")
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce_window((X, X), 0.0, lax.add, (2, 2))
    with pytest.raises(TypeError, match="init_values to be scalars"):
        lax.reduce_window(X, np.zeros(2, np.float32), soft_sum, (2, 2))
    with pytest.raises(TypeError, match="inconsistent dtypes"):
        lax.reduce_window(X, np.int32(0), soft_sum, (2, 2))
    with pytest.raises(TypeError, match="structure of the operands"):
        lax.reduce_window(X, 0.0, lambda a, b: (a, b), (2, 2))
    with pytest.raises(TypeError, match="must be callable"):
        lax.reduce_window(X, 0.0, "add", (2, 2))
    with pytest.raises(TypeError, match="closes over a traced value"):
        plax.jit(lambda x, s: lax.reduce_window(x, 0.0, lambda a, b: a + s * b, (2, 2)))(X, 2.0)
    with pytest.raises(ValueError, match="removes more elements"):
        lax.reduce_window(X, 0.0, lax.add, (1, 1), padding=((-3, -2), (0, 0)))
    with pytest.raises(ValueError, match="select_prim"):
        lax.select_and_gather_add(X, X, lax.gt_p, (2, 2), (1, 1), "VALID")
    with pytest.raises(TypeError, match="must have the shape"):
        lax.select_and_scatter_add(X, X, lax.ge_p, (2, 2), (1, 1), "VALID")


def test_padtype_to_pads_and_shape_tuple():
    assert lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "SAME") == [(1, 1), (0, 1)]
    assert lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "same_lower") == [(1, 1), (1, 0)]
    assert lax.padtype_to_pads((5, 6), (3, 2), (2, 1), "VALID") == [(0, 0), (0, 0)]
    assert lax.reduce_window_shape_tuple((5, 6), (3, 2), (2, 1), ((1, 1), (0, 1)),
                                         (1, 2)) == (3, 11)


@requires_jax
def test_against_jax():
    body = """
    x = inputs["x"]
    win = ((2, 3), (1, 2), [(1, 0), (0, 2)], (1, 2), (2, 1))
    hand = lambda a, b: lax.select(a >= b, a, b)
    results["sum"] = lax.reduce_window(x, 0.0, lax.add, *win)
    results["max"] = lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 1), "SAME")
    results["mul"] = lax.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "SAME_LOWER")
    results["generic"] = lax.reduce_window(x / 4, 0.0, lambda a, b: a + b + a * b, *win)
    results["hand_max"] = lax.reduce_window(x, -np.inf, hand, (2, 2), (1, 1), "VALID")
    results["ints"] = lax.reduce_window(inputs["i"], 0, lax.add, (2, 2), (1, 1), "SAME")
    f = lambda x: jnp.sum(jnp.sin(lax.reduce_window(x, -np.inf, lax.max, (2, 3), (2, 1),
                                                     "SAME")))
    results["grad_max"] = lib.grad(f)(x)
    g = lambda x: jnp.sum(lax.reduce_window(x, 0.0, lax.add, *win) ** 2)
    results["grad_sum"] = lib.grad(g)(x)
    results["jvp_generic"] = lib.jvp(lambda x: lax.reduce_window(x, -np.inf, hand, (2, 2)),
                                     (x,), (x[::-1],))[1]
    results["batched"] = lib.vmap(lambda x: lax.reduce_window(x, 0.0, lax.add, (2,), (1,),
                                                              "SAME"))(x)
    """
    inputs = {"x": X, "i": RNG.integers(-5, 5, (4, 6)).astype(np.int32)}
    assert_same_as_jax(body, inputs)
