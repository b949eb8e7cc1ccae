"""Keyword parameters of JAX's public functions that plax took late: each checked
against NumPy or a known answer, and its bad values against JAX's exception class."""
from functools import partial

import numpy as np
import pytest

import plax
import plax.lax as lax
import plax.numpy as jnp
from plax.sharding import AxisType, NamedSharding, PartitionSpec as P, SingleDeviceSharding

X = np.arange(6.0, dtype=np.float32).reshape(2, 3) ** 2


@pytest.fixture(scope="module")
def mesh():
    """A one-device mesh with an `Explicit` axis: `out_sharding` shows in the type."""
    return plax.make_mesh((1,), ("x",), axis_types=(AxisType.Explicit,))


@pytest.fixture(scope="module")
def split(mesh):
    return NamedSharding(mesh, P("x"))


# --- numpy reductions, sorting, indexing ---------------------------------------------

@pytest.mark.parametrize("fn", [jnp.var, jnp.std])
def test_var_std_take_a_precomputed_mean(fn):
    mean = X.mean(axis=1, keepdims=True)
    np_fn = getattr(np, fn.__name__)
    np.testing.assert_allclose(fn(X, axis=1, mean=mean, ddof=1),
                               np_fn(X, axis=1, mean=mean, ddof=1), rtol=1e-6)
    # The mean given is the one used, not recomputed: a shifted one changes the answer.
    np.testing.assert_allclose(jnp.var(X, axis=1, mean=mean + 1), np.var(X, axis=1) + 1,
                               rtol=1e-6)
    with pytest.raises(TypeError):  # its dimensions must be kept, as in JAX
        fn(X, axis=1, mean=X.mean(axis=1))


@pytest.mark.parametrize("dtype", [np.int16, np.float32])
@pytest.mark.parametrize("descending", [False, True])
def test_argsort_dtype(dtype, descending):
    a = np.array([3, 1, 2, 1])
    out = jnp.argsort(a, descending=descending, dtype=dtype)
    expected = np.argsort(-a if descending else a, kind="stable")
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, expected.astype(dtype))


def test_argsort_bad_dtype():
    with pytest.raises(TypeError):
        jnp.argsort(np.arange(3), dtype="not a dtype")


@pytest.mark.parametrize("mode, wrap, expected", [
    ("clip", True, [4, 1, 4]), ("clip", False, [0, 1, 4]),
    ("fill", True, [4, 1, -1]), ("fill", False, [-1, 1, -1]),
    ("promise_in_bounds", True, [4, 1, 4]), ("promise_in_bounds", False, [0, 1, 4])])
def test_take_along_axis_wrap_negative_indices(mode, wrap, expected):
    out = jnp.take_along_axis(np.arange(5), np.array([-1, 1, 7]), axis=0, mode=mode,
                              fill_value=-1, wrap_negative_indices=wrap)
    np.testing.assert_array_equal(out, expected)


# --- lax -------------------------------------------------------------------------------

def test_cond_and_switch_take_operand_keyword():
    inc, dec = (lambda a: a + 1), (lambda a: a - 1)
    assert lax.cond(True, inc, dec, operand=1.0) == 2.0
    assert plax.jit(lambda p: lax.cond(p, inc, dec, operand=1.0))(False) == 0.0
    assert lax.switch(1, [inc, dec], operand=1.0) == 0.0
    with pytest.raises(TypeError, match="operand"):
        lax.cond(True, inc, dec, 1.0, operand=1.0)
    with pytest.raises(TypeError, match="operand"):
        lax.switch(0, [inc, dec], 1.0, operand=1.0)


def test_mul_out_dtype():
    out = lax.mul(np.int8(100), np.int8(3), out_dtype=np.int32)
    assert out.dtype == np.int32 and out == 300  # no int8 wrap-around
    assert lax.mul(np.float32(1.5), np.float32(3), out_dtype=np.float16).dtype == np.float16
    assert plax.grad(lambda x: lax.mul(x, x, out_dtype=np.float32))(np.float32(3.0)) == 6.0
    with pytest.raises(TypeError):
        lax.mul(np.int8(1), np.int8(2), out_dtype="not a dtype")


ARANGE = np.arange(5)


@pytest.mark.parametrize("fn, args", [
    (lax.dynamic_slice, (ARANGE, (-2,), (2,))),
    (lax.dynamic_slice_in_dim, (ARANGE, -2, 2)),
    (lax.dynamic_index_in_dim, (ARANGE, -2)),
    (lax.dynamic_update_slice, (ARANGE, np.array([9, 9]), (-2,))),
    (lax.dynamic_update_slice_in_dim, (ARANGE, np.array([9, 9]), -2, 0)),
    (lax.dynamic_update_index_in_dim, (ARANGE, np.int64(9), -2, 0))])
def test_allow_negative_indices(fn, args):
    wrapped = fn(*args)
    expected = {"dynamic_slice": [3, 4], "dynamic_slice_in_dim": [3, 4],
                "dynamic_index_in_dim": [3], "dynamic_update_slice": [0, 1, 2, 9, 9],
                "dynamic_update_slice_in_dim": [0, 1, 2, 9, 9],
                "dynamic_update_index_in_dim": [0, 1, 2, 9, 4]}[fn.__name__]
    np.testing.assert_array_equal(wrapped, expected)
    np.testing.assert_array_equal(fn(*args, allow_negative_indices=True), expected)
    if fn.__name__ in ("dynamic_index_in_dim", "dynamic_update_index_in_dim"):
        # jits, as JAX's: the index is traced there, so it is clamped, not checked
        clamped = {"dynamic_index_in_dim": [0], "dynamic_update_index_in_dim": [9, 1, 2, 3, 4]}
        np.testing.assert_array_equal(fn(*args, allow_negative_indices=False),
                                      clamped[fn.__name__])
        return
    with pytest.raises(ValueError, match="allow_negative_indices=False"):
        fn(*args, allow_negative_indices=False)


def test_allow_negative_indices_traced_and_per_dimension():
    # A traced negative index is not wrapped: the slice is clamped into bounds.
    sliced = plax.jit(lambda i: lax.dynamic_slice(ARANGE, (i,), (2,),
                                                  allow_negative_indices=False))
    np.testing.assert_array_equal(sliced(-2), [0, 1])
    grid = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(
        lax.dynamic_slice(grid, (-1, 1), (1, 2), allow_negative_indices=[True, False]),
        [[4, 5]])
    with pytest.raises(ValueError, match="allow_negative_indices=False"):
        lax.dynamic_slice(grid, (0, -1), (1, 2), allow_negative_indices=(True, False))
    with pytest.raises(ValueError, match="allow_negative_indices"):
        lax.dynamic_slice(grid, (0, 0), (1, 2), allow_negative_indices=[True])


def test_special_functions_take_keywords():
    assert np.isclose(lax.betainc(a=2.0, b=3.0, x=0.5), 0.6875)
    assert np.isclose(lax.igamma(1.0, x=2.0), 1 - np.exp(-2.0))
    assert np.isclose(lax.igammac(a=1.0, x=2.0), np.exp(-2.0))
    assert np.isclose(lax.zeta(x=2.0, q=1.0), np.pi ** 2 / 6)
    assert np.isclose(lax.igamma(1.0, 2.0), 1 - np.exp(-2.0))  # positional: no binding
    with pytest.raises(TypeError, match="betainc.*'x'"):
        lax.betainc(1.0, 2.0)
    with pytest.raises(TypeError, match="igamma.*too many"):
        lax.igamma(1.0, 2.0, 3.0)


# --- transformations and config -------------------------------------------------------

def _scaled(x, n=1):
    return x * 2 if n > 2 else x  # a Python branch: n must not be traced


def test_checkpoint_static_argnames():
    f = plax.checkpoint(_scaled, static_argnames="n")
    assert f(1.0, n=3) == 2.0
    assert plax.grad(f)(1.0, n=3) == 2.0
    assert plax.grad(plax.checkpoint(_scaled, static_argnames=("n",)))(1.0, n=1) == 1.0
    with pytest.raises(ValueError, match="'m'"):
        plax.checkpoint(_scaled, static_argnames="m")
    with pytest.raises(TypeError, match="static_argnames"):
        plax.checkpoint(_scaled, static_argnames=3)


def test_custom_jvp_and_vjp_nondiff_argnames():
    @partial(plax.custom_jvp, nondiff_argnames=("n",))
    def power(x, n):
        return x ** n

    @power.defjvp
    def _(n, primals, tangents):
        return power(primals[0], n), 10.0 * tangents[0]

    assert plax.grad(power)(2.0, 3) == 10.0
    assert plax.grad(lambda x: power(x, n=3))(2.0) == 10.0

    @partial(plax.custom_vjp, nondiff_argnames="n")
    def scale(x, n):
        return x * n

    scale.defvjp(lambda x, n: (scale(x, n), None), lambda n, res, ct: (ct * 7.0,))
    assert plax.grad(scale)(2.0, 3) == 7.0
    with pytest.raises(ValueError, match="'q'"):
        plax.custom_jvp(lambda x: x, nondiff_argnames=("q",))


def test_vmap_sum_match():
    out = plax.vmap(lambda a: (a * 2, 1.0), out_axes=(None, None), sum_match=True)(X)
    np.testing.assert_allclose(out[0], 2 * X.sum(0))
    assert out[1] == 1.0  # an unmapped output stays as it is
    with pytest.raises(ValueError, match="got axis spec None but output was batched"):
        plax.vmap(lambda a: a, out_axes=None)(X)


def test_config_context_managers_take_new_val():
    with plax.enable_x64(new_val=True):
        assert jnp.zeros(1).dtype == np.float64
    with plax.numpy_rank_promotion(new_val="raise"):
        with pytest.raises(ValueError):
            jnp.add(np.ones(2), np.ones((2, 2)))


# --- out_sharding ---------------------------------------------------------------------

CREATORS = {
    "zeros": lambda **kw: jnp.zeros(4, **kw),
    "ones": lambda **kw: jnp.ones(4, np.int32, **kw),
    "empty": lambda **kw: jnp.empty(4, **kw),
    "full": lambda **kw: jnp.full((4,), 2.0, **kw),
    "full_like": lambda **kw: jnp.full_like(np.arange(4), 5, **kw),
    "zeros_like": lambda **kw: jnp.zeros_like(np.arange(4), **kw),
    "ones_like": lambda **kw: jnp.ones_like(np.arange(4), **kw),
    "arange": lambda **kw: jnp.arange(4, **kw),
    "arange_float": lambda **kw: jnp.arange(0.0, 4, **kw),
    "array": lambda **kw: jnp.array([1, 2, 3, 4], **kw),
    "asarray": lambda **kw: jnp.asarray(np.arange(4), **kw),
    "dot": lambda **kw: jnp.dot(np.ones((4, 3)), np.ones(3), **kw),
    "matmul": lambda **kw: jnp.matmul(np.ones((4, 3)), np.ones(3), **kw),
    "tensordot": lambda **kw: jnp.tensordot(np.ones((4, 3)), np.ones(3), 1, **kw),
    "ravel": lambda **kw: jnp.ravel(np.ones((2, 2)), **kw),
    "broadcast_to": lambda **kw: jnp.broadcast_to(np.ones(1), (4,), **kw),
    "broadcast_to_same": lambda **kw: jnp.broadcast_to(np.ones(4), (4,), **kw),
    "reduce_sum": lambda **kw: lax.reduce_sum(np.ones((4, 3)), (1,), **kw),
    "broadcasted_iota": lambda **kw: lax.broadcasted_iota(np.int32, (4,), 0, **kw),
    "broadcast_in_dim": lambda **kw: lax.broadcast_in_dim(np.ones(3), (4, 3), (1,), **kw),
    "rng_bit_generator": lambda **kw: lax.rng_bit_generator(
        np.array([1, 2, 3, 4], np.uint32), (4,), **kw)[1],
    "ragged_dot": lambda **kw: lax.ragged_dot(np.arange(12.0).reshape(4, 3),
                                              np.ones((2, 3, 5)), np.array([1, 3]), **kw),
}


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_out_sharding_types_the_result(name, split, mesh):
    make = CREATORS[name]
    plain = make()
    out = make(out_sharding=split)
    np.testing.assert_array_equal(out, plain)
    traced = plax.jit(lambda: make(out_sharding=split))()
    with plax.set_mesh(mesh):  # a bare PartitionSpec: on the mesh in context
        in_context = make(out_sharding=P("x"))
    for x in (out, traced, in_context):  # the first dimension split over "x"
        assert tuple(plax.typeof(x).sharding.spec)[0] == "x"


def test_lax_reduce_sum_out_sharding(mesh):
    x = plax.device_put(np.ones((4, 3), np.float32), NamedSharding(mesh, P(None, "x")))
    out = lax.reduce_sum(x, (1,), out_sharding=NamedSharding(mesh, P("x")))
    np.testing.assert_array_equal(out, np.full(4, 3.0))
    assert plax.typeof(out).sharding.spec == P("x")
    with plax.set_mesh(mesh):
        summed = plax.jit(lambda x: lax.reduce_sum(x, (0,), out_sharding=P()))(x)
    assert plax.typeof(summed).sharding.spec == P(None)


def test_repeat_out_sharding(mesh):
    with plax.set_mesh(mesh):  # computed on the mesh's axes made Auto, as JAX's
        out = jnp.repeat(np.arange(3), 2, out_sharding=P("x"))
        traced = plax.jit(lambda a: jnp.repeat(a, np.array([1, 2, 0]), out_sharding=P("x")))(
            np.arange(3))
    np.testing.assert_array_equal(out, np.repeat(np.arange(3), 2))
    np.testing.assert_array_equal(traced, [0, 1, 1])
    assert plax.typeof(out).sharding.spec == plax.typeof(traced).sharding.spec == P("x")


def test_einsum_out_sharding(mesh):
    a, b, c = np.ones((4, 3)), np.arange(6.0).reshape(3, 2), np.ones((2, 5))
    with plax.set_mesh(mesh):
        chain = jnp.einsum("ij,jk,kl->il", a, b, c, out_sharding=P("x"))
        swapped = plax.jit(lambda a, b: jnp.einsum("ij,jk->ki", a, b, out_sharding=P("x")))(
            a, b)
    np.testing.assert_allclose(chain, a @ b @ c)
    np.testing.assert_allclose(swapped, (a @ b).T)
    assert plax.typeof(chain).sharding.spec == plax.typeof(swapped).sharding.spec == P("x", None)
    with pytest.raises(TypeError, match="out_sharding"):
        jnp.einsum("ij,jk", a, b, out_sharding=3)


def test_percentile_out_sharding(mesh):
    a = np.arange(12.0).reshape(4, 3)
    with plax.set_mesh(mesh):
        out = plax.jit(lambda a: jnp.percentile(a, np.array([25.0, 75.0]), axis=0,
                                                out_sharding=P(None, "x")))(a)
    np.testing.assert_allclose(out, np.percentile(a, [25, 75], axis=0))
    assert plax.typeof(out).sharding.spec == P(None, "x")
    with pytest.raises(TypeError, match="out_sharding"):
        jnp.percentile(a, 50, out_sharding=3)


def test_bincount_out_sharding(mesh):
    x = np.array([0, 1, 1, 3])
    replicated = NamedSharding(mesh, P())
    np.testing.assert_array_equal(jnp.bincount(x, out_sharding=replicated), np.bincount(x))
    np.testing.assert_array_equal(
        plax.jit(lambda x: jnp.bincount(x, length=5, out_sharding=replicated))(x),
        np.bincount(x, minlength=5))
    with pytest.raises(TypeError, match="replicated"):  # a ShardingTypeError, as JAX
        jnp.bincount(x, out_sharding=NamedSharding(mesh, P("x")))
    with pytest.raises(TypeError, match="out_sharding"):
        jnp.bincount(x, out_sharding=3)


def test_lax_reduce_out_sharding(mesh):
    x = plax.device_put(np.arange(12.0).reshape(4, 3), NamedSharding(mesh, P(None, "x")))
    split = NamedSharding(mesh, P("x"))
    total = lax.reduce(x, 1.0, lax.add, (1,), out_sharding=split)  # not the identity: + 1
    np.testing.assert_array_equal(total, np.arange(12.0).reshape(4, 3).sum(1) + 1)
    assert plax.typeof(total).sharding.spec == P("x")
    assert plax.typeof(lax.reduce(x, -np.inf, lax.max, (1,), out_sharding=split)
                       ).sharding.spec == P("x")
    with pytest.raises(NotImplementedError, match="out_sharding"):  # no monoid: JAX ignores it
        lax.reduce(x, 0.0, lambda a, b: a + 2 * b, (1,), out_sharding=split)


@pytest.mark.parametrize("name", ["zeros", "full_like", "arange", "asarray", "dot", "ravel",
                                  "reduce_sum", "broadcasted_iota", "broadcast_in_dim"])
def test_out_sharding_must_be_named_or_a_spec(name):
    with pytest.raises(TypeError, match="out_sharding"):
        CREATORS[name](out_sharding=SingleDeviceSharding(plax.devices()[0]))


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_a_bare_spec_outside_a_mesh_context_is_a_value_error(name):
    # as in JAX: a PartitionSpec names axes of the mesh in context, and there is none
    # (under jit too, whatever mesh the arguments' types name)
    with pytest.raises(ValueError, match="outside a mesh context"):
        CREATORS[name](out_sharding=P())
    with pytest.raises(ValueError, match="outside a mesh context"):
        plax.jit(lambda: CREATORS[name](out_sharding=P("x")))()


@pytest.mark.parametrize("name", ["zeros", "full_like", "arange", "asarray"])
def test_creation_out_sharding_bad_values(name):
    make = CREATORS[name]
    auto = plax.make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))
    with pytest.raises(ValueError, match="Auto"):
        make(out_sharding=NamedSharding(auto, P("x")))


def test_out_sharding_excludes_device(split):
    with pytest.raises(ValueError, match="only one of `device` or `out_sharding`"):
        jnp.zeros(4, device=plax.devices()[0], out_sharding=split)
    with pytest.raises(ValueError, match="only one of `device` or `out_sharding`"):
        jnp.asarray([1.0], device=plax.devices()[0], out_sharding=split)


# --- JAX's parameter names, for keyword callers ----------------------------------------

def test_lax_dot_dimension_numbers():
    a, b = np.ones((2, 3, 4)), np.ones((2, 4, 5))
    out = lax.dot(a, b, dimension_numbers=(((2,), (1,)), ((0,), (0,))))
    np.testing.assert_allclose(out, np.matmul(a, b))
    with pytest.raises(ValueError, match="dimension_numbers"):  # a batched product needs them
        lax.dot(a, b)


def test_keyword_names_of_dtype_and_key_helpers():
    assert jnp.issubdtype(arg1=jnp.bfloat16, arg2=jnp.floating)
    assert str(plax.random.key_dtype(impl_spec="rbg")) == "key<rbg>"
