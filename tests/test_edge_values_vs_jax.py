"""Edge values and type checks that once differed from JAX (issue 31), against JAX
0.10.2 in a subprocess: results with their dtypes and weak types, or the exception
class and message (the line that says where a branch is defined left out, since the
two sides run the driver at different line offsets). Where JAX fails for no reason
(a median of nothing), NumPy's answer is the reference."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax

from tests.jax_differential import requires_jax, run_driver_here, start_driver_in_jax

_DRIVER = r'''
import numpy as np

PROGRAMS = {
    "argwhere_false": lambda: jnp.argwhere(jnp.array(False)),
    "argwhere_true": lambda: jnp.argwhere(jnp.array(True)),
    "prod_complex_initial_inf_jit": lambda: jit(lambda x: jnp.prod(x, initial=np.inf))(
        jnp.array([1 + 1j, 2j], jnp.complex64)),
    "prod_complex_initial_inf": lambda: jnp.prod(jnp.array([1 + 1j, 2j], jnp.complex64),
                                                 initial=np.inf),
    "full_2_40_float32": lambda: jnp.full((2,), 2**40, dtype=jnp.float32),
    "full_2_70_float32": lambda: jnp.full((2,), 2**70, dtype=jnp.float32),
    "full_300_int8": lambda: jnp.full((2,), 300, dtype=jnp.int8),
    "full_like_2_40": lambda: jnp.full_like(jnp.zeros(2), 2**40),
    "fori_weak_index": lambda: lax.fori_loop(0, 3, lambda i, c: c + i, jnp.int8(1)),
    "fori_traced_bounds": lambda: lax.fori_loop(0, jnp.int32(3), lambda i, c: c + i,
                                                jnp.int8(1)),
    "cond_weak_false_branch": lambda: lax.cond(True, lambda x: x + 1, lambda x: 2.0,
                                               jnp.float32(1)),
    "cond_weak_true_branch": lambda: lax.cond(True, lambda x: 2.0, lambda x: x + 1,
                                              jnp.float32(1)),
    "switch_weak_branch_0": lambda: lax.switch(1, [lambda x: 2.0, lambda x: x * 2],
                                               jnp.float32(1)),
    "scan_weak_init": lambda: lax.scan(lambda c, x: (c + x, c), 0, jnp.ones(3)),
    "scan_carry_dtype": lambda: lax.scan(lambda c, x: (c.astype(jnp.int32), None),
                                         jnp.float32(1), None, length=2),
    "scan_carry_shape": lambda: lax.scan(lambda carry, x: (jnp.stack([carry, carry]), x),
                                         jnp.float32(1), jnp.ones(2)),
    "scan_carry_tree": lambda: lax.scan(lambda c, x: ([c, c], None), (1.0, 2.0), None,
                                        length=1),
    "while_carry_dtype": lambda: lax.while_loop(lambda c: False,
                                                lambda c: c.astype(jnp.int32), jnp.float32(1)),
    "while_two_leaves": lambda: lax.while_loop(
        lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1].astype(jnp.float32)), (0, jnp.int8(1))),
    "fori_carry_shape": lambda: lax.fori_loop(0, 3, lambda i, c: jnp.stack([c, c]),
                                              jnp.float32(1)),
    "cond_dtype": lambda: lax.cond(True, lambda x: x, lambda x: x.astype(jnp.int32),
                                   jnp.float32(1)),
    "cond_two_outputs": lambda: lax.cond(True, lambda x: {"a": x, "b": x},
                                         lambda x: {"a": x[None], "b": x.astype(jnp.int8)},
                                         jnp.float32(1)),
    "switch_dtype": lambda: lax.switch(1, [lambda x: x, lambda x: x.astype(jnp.int32)],
                                       jnp.float32(1)),
    "masked_asarray": lambda: jnp.asarray(np.ma.masked_array([1.0, 2.0], mask=[True, False])),
    "masked_jit_sum": lambda: jit(lambda x: x.sum())(np.ma.masked_array([1.0, 2.0],
                                                                        mask=[True, False])),
    "masked_plus_array": lambda: jnp.ones(2) + np.ma.masked_array([1.0, 2.0], mask=[0, 1]),
    "masked_mean": lambda: jnp.mean(np.ma.masked_array([1.0, 2.0], mask=[True, False])),
    "masked_closed_over_in_jit": lambda: jit(lambda: jnp.mean(np.ma.masked_array(
        [1.0, 2.0], mask=[True, False])))(),
    "masked_nested_jit_argument": lambda: jit(lambda: jit(lambda x: x)(
        np.ma.masked_array([True, False], mask=[True, False])))(),
    "masked_lax_operand": lambda: lax.neg(np.ma.masked_array([1.0, 2.0], mask=[True, False])),
    "masked_lax_operand_jit": lambda: jit(lambda: lax.neg(np.ma.masked_array(
        [1.0, 2.0], mask=[True, False])))(),
    # the fuzzer's run of 2026-12-06 (seed 32): no degrees of freedom left is NaN
    "var_ddof_past_n": lambda: jit(lambda x: jnp.var(x, axis=-1, ddof=2))(
        jnp.array([[0.5, -1.25], [2.0, 0.75]], jnp.bfloat16)),
    "std_ddof_past_n_where": lambda: jnp.std(jnp.array([1.0, 2.0, 4.0]), ddof=2,
                                             where=jnp.array([True, True, False])),
    "structured_asarray": lambda: jnp.add(np.zeros(2, [("a", "f4"), ("b", "i4")]), 1),
    "while_false_empty": lambda: lax.while_loop(lambda c: False, lambda c: c,
                                                jnp.ones((0,))),
    "gcd_empty": lambda: jnp.gcd(jnp.ones((0,), jnp.int32), jnp.ones((0,), jnp.int32)),
    # the fuzzer's long run (issue 31): silent differences
    "cumprod_uint8_to_bool": lambda: jnp.cumprod(jnp.array([1, 2, 0, 3], jnp.uint8),
                                                 dtype=bool),
    "cumsum_uint8_to_bool": lambda: jnp.cumsum(jnp.array([[0, 1], [2, 0]], jnp.uint8),
                                               axis=0, dtype=bool),
    "nancumprod_to_bool": lambda: jnp.nancumprod(jnp.array([2.0, np.nan, 0.0, 3.0]),
                                                 dtype=bool),
    "cumulative_prod_to_bool": lambda: jnp.cumulative_prod(
        jnp.array([1, 2, 0, 3], jnp.int8), dtype=bool, include_initial=True),
    "cumprod_empty_to_bool": lambda: jnp.cumprod(jnp.zeros((0, 2), jnp.uint8), axis=0,
                                                 dtype=bool),
    "geomspace_negative_start_complex": lambda: jnp.geomspace(-1, 8, 4, dtype=jnp.complex64),
    "geomspace_negative_both_complex": lambda: jnp.geomspace(-2, -32, 3,
                                                             dtype=jnp.complex64),
    "geomspace_no_endpoint_complex": lambda: jnp.geomspace(-1.0, 16.0, 4, endpoint=False,
                                                           dtype=jnp.complex64),
    "mean_int16_of_bfloat16_inf": lambda: jit(lambda x: jnp.mean(x, axis=0, dtype=jnp.int16))(
        jnp.array([[np.inf], [0.0], [0.0]], jnp.bfloat16)),
    "mean_int8_wraps": lambda: jnp.mean(jnp.array([100, 100, 101], jnp.int8), dtype=jnp.int8),
    "mean_int_of_floats": lambda: jnp.mean(jnp.array([[7.9, -7.5], [1.2, 2.0], [3.0, 0.0]]),
                                           axis=0, dtype=jnp.int16),
    "mean_uint8_where": lambda: jnp.mean(jnp.array([1, 2, 4]), dtype=jnp.uint8,
                                         where=jnp.array([True, False, True])),
    "donate_both_split": lambda: donated_twice(np.arange(4.0, dtype=np.float32), (0, 1)),
    "donate_both_split_empty": lambda: donated_twice(np.zeros(0, np.float32), (0, 1)),
    "donate_second_split": lambda: donated_twice(np.arange(4, dtype=np.int32), (1,)),
    # the fuzzer's long runs (seeds 32 and 33): plax raised where JAX answers, or the
    # reverse; a weak type
    "shape_structured_jit": lambda: jit(lambda: jnp.shape(STRUCTURED))(),
    "size_structured": lambda: jnp.size(STRUCTURED, axis=1),
    "ndim_masked": lambda: jnp.ndim(np.ma.masked_array([1.0, 2.0], mask=[True, False])),
    "at_max_int8_complex": lambda: jnp.ones((2, 4), jnp.int8).at[:].max(
        jnp.asarray(1 + 2j, jnp.complex64)),
    "at_min_complex_repeated_jit": lambda: jit(lambda x, u: x.at[jnp.array([0, 0, 1])].min(u))(
        jnp.array([1, 2], jnp.complex64), jnp.array([1 + 2j, 1 - 1j, 3j], jnp.complex64)),
    "at_max_complex_float32": lambda: jnp.zeros(3).at[1].max(jnp.complex64(-1 + 5j)),
    "split_negative_empty": lambda: jnp.split(jnp.zeros((0, 3), jnp.complex64), -1),
    "split_negative_empty_jit": lambda: jit(lambda x: jnp.split(x, -2, axis=1))(
        jnp.zeros((2, 0))),
    "array_split_negative_empty": lambda: jnp.array_split(jnp.zeros((0,)), -3),
    "split_negative": lambda: jnp.split(jnp.zeros((2, 3)), -1),
    "at_min_list_index": lambda: jnp.ones(1, bool).at[[0, 1]].min(2.5),
    "at_set_list_index_jit": lambda: jit(lambda x: x.at[[0, 1]].set(2.5))(jnp.ones(3)),
    "gcd_bool_python_int_empty": lambda: jit(lambda x: jnp.gcd(x, 255))(
        jnp.zeros((2, 1, 0), bool)),
    "lcm_weak_vector": lambda: jnp.lcm(jnp.broadcast_to(jnp.asarray(3), (2,)), 4),
    "gcd_weak_scalars": lambda: jnp.gcd(jnp.asarray(12), 18),
    "int_of_complex": lambda: int(jnp.zeros((), jnp.complex64)),
    "float_of_complex": lambda: float(jnp.ones((), jnp.complex64)),
    "nanpercentile_tuple_q": lambda: jnp.nanpercentile(jnp.zeros(0, jnp.int32), (25, 75)),
    # seed 34: jacrev differentiates complex inputs (of a real function) as grad does
    "jacrev_complex_input": lambda: jacrev(lambda w: jnp.abs(w) ** 2)(
        jnp.array([1 + 2j, 3 - 1j], jnp.complex64)),
    "jacrev_complex_input_fails_in_fun": lambda: jacrev(lambda w, x: jnp.tanh(x @ w).sum())(
        jnp.ones((1, 2), jnp.complex64), jnp.complex64(1 + 1j)),
    "jacrev_allow_int_block": lambda: jacrev(lambda n, y: y * jnp.ones(3), argnums=(0, 1),
                                             allow_int=True)(jnp.ones(2, jnp.int8), 2.0),
    "jacrev_int_input": lambda: jacrev(lambda n: n.sum())(jnp.ones(2, jnp.int32)),
    # seed 35
    "hypot_weak_vector": lambda: jit(lambda x: jnp.hypot(x, 0))(jnp.array([[True]])),
    "hypot_weak_scalars": lambda: jnp.hypot(jnp.asarray(3.0), 4),
    "reshape_no_arguments": lambda: jnp.ones((1, 1), jnp.uint8).reshape(),
    "reshape_no_arguments_size_2": lambda: jnp.ones(2).reshape(),
    "matmul_bad_precision_first": lambda: jnp.matmul(jnp.ones((2, 2)), jnp.ones((3, 0)),
                                                     precision="bogus"),
    "dot_bad_precision_scalar": lambda: jnp.dot(jnp.ones((1, 3), bool), jnp.int32(2),
                                                precision="bogus"),
    "inner_bad_precision_scalar": lambda: jnp.inner(jnp.ones(2), 2.0, precision="bogus"),
    "argmax_empty_complex": lambda: jit(lambda x: lax.argmax(x, 0, jnp.int32))(
        jnp.zeros((0,), jnp.complex64)),
    # JAX's eager path moves an out-of-bounds start back inside; its jit raises
    "slice_out_of_bounds_jit": lambda: jit(lambda x: lax.slice(x, (4,), (5,)))(
        jnp.ones(4, bool)),
    "broadcast_in_dim_rank_jit": lambda: jit(lambda x: lax.broadcast_in_dim(
        x, (3, 1, 2, 1), ()))(jnp.ones((1, 1, 3), jnp.uint8)),
}
STRUCTURED = np.zeros((1, 4), [("a", "f4"), ("b", "i4")])


def donated_twice(base, donate):
    """Two calls of one jitted function donating `donate` of two Arrays split over two
    devices (the second call takes the cached path): the result, and which of the
    arguments were deleted."""
    mesh = Mesh(np.array(devices()[:2]), ("d",))
    f = jit(lambda a, b: a * 2 + b, donate_argnums=donate)
    deleted = []
    for _ in range(2):
        x = device_put(base, NamedSharding(mesh, P("d")))
        y = jnp.copy(x)
        out = f(x, y)
        deleted += [x.is_deleted(), y.is_deleted()]
    return out, np.array(deleted)


def leaf(x):
    a = np.asarray(x)
    return [list(a.shape), str(a.dtype), bool(getattr(x, "weak_type", False)),
            repr(a.tolist())]


def run(names):
    answers = {}
    for name in names:
        try:
            out = PROGRAMS[name]()
            answers[name] = [leaf(x) for x in tree_leaves(out)]
        except Exception as e:
            answers[name] = [type(e).__name__, str(e)]
    return answers
'''
PROGRAMS = [line.split('"')[1] for line in _DRIVER.splitlines()
            if line.startswith('    "') and '": lambda' in line]
# exceptions whose messages are the libraries' own (JAX's names JAX, links an issue, or
# comes from a check of sizes it computed first): only their classes are compared
_CLASS_ONLY = {"structured_asarray", "split_negative", "at_min_list_index",
               "jacrev_complex_input_fails_in_fun", "matmul_bad_precision_first",
               "dot_bad_precision_scalar", "argmax_empty_complex",
               "at_set_list_index_jit", "nanpercentile_tuple_q", "slice_out_of_bounds_jit",
               "broadcast_in_dim_rank_jit"}
_WHERE = re.compile(r" at [^\n]*:\d+\n")  # "true_fun is <lambda> at <string>:40"


@pytest.fixture(scope="module")
def jax_answers():
    return start_driver_in_jax(
        "import json, sys\nimport jax\nimport jax.numpy as jnp\n"
        "from jax import devices, device_put, jacrev, jit, lax\n"
        "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n"
        "from jax.tree_util import tree_leaves\n" + _DRIVER
        + "print(json.dumps(run(json.loads(sys.argv[1]))))\n", PROGRAMS)()


def _comparable(answer):
    if isinstance(answer, list) and len(answer) == 2 and isinstance(answer[0], str):
        # an exception: its class, and its message without locations
        return [answer[0], _WHERE.sub("\n", answer[1])]
    return answer


@requires_jax
@pytest.mark.parametrize("name", PROGRAMS)
def test_as_jax(jax_answers, name, plax_answers):
    mine, theirs = plax_answers[name], jax_answers[name]
    if name in _CLASS_ONLY or name.startswith("masked"):
        mine, theirs = mine[0], theirs[0]  # the class (JAX's message names JAX)
    if name.startswith("geomspace"):  # powers computed in float32: a few ulps apart
        for a, b in zip(mine, theirs, strict=True):
            assert a[:3] == b[:3]
            np.testing.assert_allclose(np.array(eval(a[3]), a[1]),  # noqa: S307 - reprs
                                       np.array(eval(b[3]), b[1]), rtol=2e-6, atol=2e-6)
        return
    assert _comparable(mine) == _comparable(theirs)


@pytest.fixture(scope="module")
def plax_answers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_driver_here(_DRIVER, PROGRAMS, lax=lax, tree_leaves=plax.tree_util.tree_leaves,
                               Mesh=plax.sharding.Mesh, devices=plax.devices,
                               jacrev=plax.jacrev)


def test_known_answers_of_former_differences(plax_answers):
    """The answers the differences were about, independent of JAX being installed."""
    assert plax_answers["argwhere_false"] == [[[0, 0], "int32", False, "[]"]]
    assert plax_answers["full_2_40_float32"] == [[[2], "float32", False,
                                                  "[1099511627776.0, 1099511627776.0]"]]
    assert plax_answers["fori_weak_index"] == [[[], "int8", False, "4"]]
    assert plax_answers["masked_asarray"][0] == "ValueError"
    assert plax_answers["scan_carry_dtype"][0] == "TypeError"
    assert plax_answers["cumprod_uint8_to_bool"] == [[[4], "bool", False,
                                                      "[True, True, False, False]"]]
    assert plax_answers["geomspace_negative_start_complex"][0][:2] == [[4], "complex64"]
    assert "nan" not in plax_answers["geomspace_negative_start_complex"][0][3]
    assert plax_answers["mean_int16_of_bfloat16_inf"] == [[[1], "int16", False, "[10922]"]]
    # the unused donor (y: one output, two donated inputs) stays alive
    assert plax_answers["donate_both_split"][1][3] == "[True, False, True, False]"
    assert plax_answers["shape_structured_jit"] == [[[], "int32", True, "1"],
                                                    [[], "int32", True, "4"]]
    assert plax_answers["at_max_int8_complex"] == [[[2, 4], "int8", False, repr([[1] * 4] * 2)]]
    assert plax_answers["split_negative_empty"] == []
    assert plax_answers["gcd_bool_python_int_empty"][0][:3] == [[2, 1, 0], "int32", False]
    for name in ("at_min_list_index", "int_of_complex", "nanpercentile_tuple_q"):
        assert plax_answers[name][0] == "TypeError"
    assert "position 1" in plax_answers["nanpercentile_tuple_q"][1]


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("shape, call", [
    ((4,), lambda x: lax.slice(x, (4,), (5,))),  # JAX eager: x[3:4] (a dynamic_slice clamps)
    ((4, 1, 1, 1), lambda x: lax.broadcast_in_dim(x, (3, 2, 1, 2), ())),  # JAX: x itself
], ids=["slice_past_the_end", "broadcast_in_dim_without_dims"])
def test_invalid_static_arguments_raise_in_both_modes(mode, shape, call):
    """Arguments that JAX's shape rules refuse with a TypeError, which its shortcuts skip
    (eagerly for a slice; for a broadcast of the same rank, in both modes), answering
    an array of another shape: plax checks them in both modes."""
    with pytest.raises(TypeError, match="broadcast_dimensions|bounds"):
        (call if mode == "eager" else plax.jit(call))(jnp.ones(shape, bool))


def test_an_integer_mean_of_nothing_is_zero():
    """JAX's program divides 0 by 0 in the integer type and the process dies (SIGFPE);
    plax's mean of no values in an integer dtype is the empty sum, 0."""
    assert int(jnp.mean(jnp.zeros((0,), jnp.float32), dtype=jnp.int32)) == 0
    assert int(jnp.mean(jnp.ones(3), dtype=jnp.int8, where=jnp.zeros(3, bool))) == 0
    out = plax.jit(lambda x: jnp.mean(x, axis=0, dtype=jnp.int32))(jnp.zeros((0, 2)))
    assert out.dtype == jnp.int32 and out.tolist() == [0, 0]


_STATISTICS = {
    "median": (jnp.median, np.median),
    "nanmedian": (jnp.nanmedian, np.nanmedian),
    "percentile": (lambda x, axis=None: jnp.percentile(x, 30.0, axis=axis),
                   lambda x, axis=None: np.percentile(x, 30.0, axis=axis)),
    "quantile": (lambda x, axis=None: jnp.quantile(x, jnp.array([0.25, 0.5]), axis=axis),
                 lambda x, axis=None: np.quantile(x, [0.25, 0.5], axis=axis)),
    "nanquantile": (lambda x, axis=None: jnp.nanquantile(x, 0.5, axis=axis),
                    lambda x, axis=None: np.nanquantile(x, 0.5, axis=axis)),
}


@pytest.mark.parametrize("name", list(_STATISTICS))
@pytest.mark.parametrize("shape, axis", [((0,), None), ((0, 3), 0), ((0, 3), 1),
                                         ((2, 0), None)])
def test_statistics_of_empty_arrays_are_nan(name, shape, axis):
    """JAX fails to gather here; NumPy's median answers NaN (with a warning), its
    percentile and quantile fail to index. plax answers NaN: one per quantile asked
    and per element of the dimensions not reduced."""
    fun, numpy_fun = _STATISTICS[name]
    x = np.zeros(shape, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name in ("median", "nanmedian"):
            np.testing.assert_array_equal(fun(x, axis=axis), numpy_fun(x, axis=axis))
    rest = () if axis is None else tuple(n for i, n in enumerate(shape) if i != axis)
    expected = np.full(((2,) if name == "quantile" else ()) + rest, np.nan, np.float32)
    for mode in (fun, plax.jit(fun, static_argnames="axis")):
        got = mode(x, axis=axis)
        assert got.shape == expected.shape and got.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(got), expected)
