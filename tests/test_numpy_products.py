"""dot, matmul, vdot, inner, outer, tensordot and einsum against NumPy, and the
shape of the Jaxprs einsum builds (one dot_general per contraction)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import plax
import plax.numpy as jnp

rng = np.random.default_rng(0)
A = rng.standard_normal((2, 3, 4)).astype(np.float32)
B = rng.standard_normal((4, 5)).astype(np.float32)
V = rng.standard_normal(4).astype(np.float32)
S = rng.standard_normal((4, 4)).astype(np.float32)
Z = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
I8 = rng.integers(-3, 4, (3, 4)).astype(np.int8)

PRODUCTS = {
    "dot_nd_2d": (lambda: jnp.dot(A, B), lambda: np.dot(A, B)),
    "dot_vec": (lambda: jnp.dot(V, V), lambda: np.dot(V, V)),
    "dot_nd_vec": (lambda: jnp.dot(A, V), lambda: np.dot(A, V)),
    "dot_scalar": (lambda: jnp.dot(2.0, V), lambda: np.dot(2.0, V)),
    "matmul_batch": (lambda: A @ B, lambda: A @ B),
    "matmul_broadcast": (lambda: jnp.matmul(A[:, None], np.stack([B, B, B])),
                         lambda: np.matmul(A[:, None], np.stack([B, B, B]))),
    "matmul_vec_left": (lambda: jnp.matmul(V, B), lambda: np.matmul(V, B)),
    "matmul_vec_right": (lambda: jnp.matmul(A, V), lambda: np.matmul(A, V)),
    "vdot": (lambda: jnp.vdot(Z, Z * 2), lambda: np.vdot(Z, Z * 2)),
    "inner": (lambda: jnp.inner(A, S), lambda: np.inner(A, S)),
    "outer": (lambda: jnp.outer(V, B), lambda: np.outer(V, B)),
    "tensordot_int": (lambda: jnp.tensordot(A, S, 1), lambda: np.tensordot(A, S, 1)),
    "tensordot_pairs": (lambda: jnp.tensordot(A, A, ((0, 2), (0, 2))),
                        lambda: np.tensordot(A, A, ((0, 2), (0, 2)))),
    "int_matmul": (lambda: I8 @ I8.T, lambda: I8 @ I8.T),
    "complex_dot": (lambda: jnp.dot(Z, Z.T), lambda: np.dot(Z, Z.T)),
}

EINSUMS = [
    ("ij,jk->ik", S, B), ("bij,jk->bik", A, B), ("bij,bkj->bik", A, A), ("ii->i", S),
    ("ii", S), ("ij->ji", S), ("ijk->", A), ("i,i", V, V), ("i,j->ij", V, V),
    ("bij,jk,kl->bil", A, S, B), ("...j,jk->...k", A, B), ("ij,ij->i", S, S),
    ("iij->j", np.stack([S] * 4, -1)), ("ab,cd,bc->ad", S, S, S),
]


def test_products_match_numpy():
    outs = plax.jit(lambda: {k: f() for k, (f, _) in PRODUCTS.items()})()
    for name, (_, ref) in PRODUCTS.items():
        expected = ref()
        actual = np.asarray(outs[name])
        assert actual.shape == expected.shape, name
        assert actual.dtype == expected.dtype or (actual.dtype == np.float32 and
                                                  expected.dtype == np.float64), name
        np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=2e-5, err_msg=name)


def test_einsum_matches_numpy():
    outs = plax.jit(lambda: [jnp.einsum(spec, *ops) for spec, *ops in EINSUMS])()
    for (spec, *ops), out in zip(EINSUMS, outs):
        expected = np.einsum(spec, *ops)
        assert out.shape == expected.shape, spec
        np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-5, err_msg=spec)


def test_einsum_interleaved_operands_and_optimize_modes():
    outs = plax.jit(lambda: (jnp.einsum(A, [0, 1, 2], B, [2, 3], [0, 3, 1]),
                             jnp.einsum("ij,jk,kl->il", S, S, B, optimize=False),
                             jnp.einsum("ij,jk,kl->il", S, S, B, optimize="greedy")))()
    np.testing.assert_allclose(outs[0], np.einsum(A, [0, 1, 2], B, [2, 3], [0, 3, 1]),
                               rtol=2e-5, atol=2e-5)
    for out in outs[1:]:
        np.testing.assert_allclose(out, S @ S @ B, rtol=2e-5, atol=2e-5)


_batch = st.lists(st.sampled_from([1, 2, 3]), max_size=3)


@given(_batch, _batch, st.sampled_from([(2, 4), (None, 4), (2, None)]))
def test_matmul_shapes_match_numpy(batch_a, batch_b, m_n):
    """None for m (or n) makes the first (second) operand a vector."""
    (m, n), k = m_n, 3
    a_shape = (*batch_a, m, k) if m else (k,)
    b_shape = (*batch_b, k, n) if n else (k,)
    a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    try:
        expected = np.matmul(a, b).shape
    except ValueError:
        with pytest.raises(ValueError, match="batch"):
            plax.make_jaxpr(jnp.matmul)(a, b)
        return
    assert plax.make_jaxpr(jnp.matmul)(a, b).out_avals[0].shape == expected


def _primitives(fn, *args):
    return [e.primitive.name for e in plax.make_jaxpr(fn)(*args).jaxpr.eqns]


def test_einsum_uses_one_dot_general_per_contraction_without_transposes():
    assert _primitives(lambda a, b: jnp.einsum("ij,jk->ik", a, b), S, B) == ["dot_general"]
    assert _primitives(lambda a, b: jnp.einsum("bij,bjk->bik", a, b), A,
                       np.ones((2, 4, 5), np.float32)) == ["dot_general"]
    assert _primitives(lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c), S, S, B) == [
        "dot_general", "dot_general"]
    # Operands are swapped to produce the requested order...
    assert _primitives(lambda a, b: jnp.einsum("ij,jk->ki", a, b), S, B) == ["dot_general"]
    # ...and only an order dot_general cannot produce (batch axes first) is transposed.
    assert _primitives(lambda a: jnp.einsum("bij,bjk->ibk", a, a), np.ones((2, 3, 3))) == [
        "dot_general", "transpose"]


def test_matmul_and_einsum_follow_type_promotion_and_preferred_element_type():
    avals = plax.make_jaxpr(lambda i, f: (
        i @ f, jnp.einsum("ij,kj->ik", i, i, preferred_element_type=jnp.int32),
        jnp.dot(i, i.T, preferred_element_type=jnp.float32)))(
        I8, np.ones((4, 2), np.float16)).out_avals
    assert [a.dtype for a in avals] == [np.float16, np.int32, np.float32]
    bools = np.array([[True, False], [False, False]])
    np.testing.assert_array_equal(jnp.dot(bools, bools), np.dot(bools, bools))


@pytest.mark.parametrize("call,error,match", [
    (lambda: jnp.dot(A, S[:3]), TypeError, r"\(2, 3, 4\) and \(3, 4\)"),
    (lambda: jnp.matmul(A, np.ones(3, np.float32)), TypeError, "incompatible shapes"),
    (lambda: jnp.matmul(2.0, B), ValueError, "does not have enough dimensions"),
    (lambda: jnp.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5))), ValueError, "batch"),
    (lambda: jnp.tensordot(A, B, 3), TypeError, "at most 2"),
    (lambda: jnp.einsum("ij,jk->ik", S, A), ValueError, "einsum"),
    (lambda: jnp.einsum("ij,jk->ik", S, np.ones((3, 2), np.float32)), ValueError,
     "einsum.*[Ss]ize of label 'j'"),
    (lambda: jnp.einsum("ii->i", B), ValueError, "einsum.*'i'"),
])
def test_product_errors(call, error, match):
    with pytest.raises(error, match=match):
        plax.make_jaxpr(call)()


def test_tensordot_with_a_negative_axis_count_contracts_nothing_as_numpy():
    a, b = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.arange(6.0, dtype=np.float32)
    for n in (-1, -4):
        np.testing.assert_allclose(jnp.tensordot(a, b.reshape(3, 2), axes=n),
                                   np.tensordot(a, b.reshape(3, 2), axes=n))
    np.testing.assert_allclose(jnp.tensordot(np.float32(2), b, axes=-1), 2 * b)
    with pytest.raises(TypeError, match="at most 1"):
        jnp.tensordot(b, b, axes=2)


def test_dot_with_a_scalar_is_a_product_and_a_logical_and_for_bools():
    """As JAX (found by the fuzzer: plax refused bool, since lax.mul takes no bool)."""
    np.testing.assert_array_equal(np.asarray(jnp.dot(jnp.array([True, False]), True)),
                                  [True, False])
    assert jnp.dot(jnp.zeros(0, bool), jnp.array(True)).shape == (0,)
    np.testing.assert_array_equal(np.asarray(jnp.dot(2.0, jnp.arange(3.0))), [0, 2, 4])
