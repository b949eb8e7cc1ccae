"""`plax.test_util.check_primitive` catches each kind of disagreement between a
primitive's rules, and names the primitive, the check and the inputs.

Each toy primitive below is correct but for one rule; the harness must reject it
for that rule. The correct one passes every check.
"""
from __future__ import annotations

import numpy as np
import pytest

import plax
from plax import lax
from plax.lax import linalg
from plax.extend import dtypes
from plax.extend.ad import Zero, defjvp, is_undefined_primal
from plax.extend.batching import unary_batcher
from plax.extend.constructors import FLOAT, INEXACT, hlo_rule, standard_primitive, unary
from plax.extend.core import ShapedArray
from plax.extend.mlir import hlo, mu
from plax.test_util import check_primitive

X = np.array([[0.3, -1.2, 0.7], [1.5, -0.4, 0.1]], np.float32)


def _double_lowering(ctx, x):
    return hlo.multiply(x, mu.splat(2, ctx.avals_out[0]))


def _sin2(name: str, **overrides):
    """2 sin(x), with its rules (any of them replaced by `overrides`)."""
    rules = dict(jvp=defjvp(lambda g, ans, x: lax.mul(g, lax.mul(lax.cos(x), 2.0))),
                 lower=lambda ctx, x: _double_lowering(ctx, hlo.sine(x)))
    rules.update(overrides)
    return unary(f"tests.{name}", dtypes=FLOAT, **rules)


def _double(name: str, **overrides):
    """2 x: linear, with a transpose rule."""
    rules = dict(jvp=defjvp(lambda g, ans, x: lax.mul(g, 2.0)), lower=_double_lowering,
                 transpose=lambda ct, x: [lax.mul(ct, 2.0)])
    rules.update(overrides)
    return unary(f"tests.{name}", dtypes=FLOAT, **rules)


def test_correct_rules_pass_every_check():
    ran = check_primitive(_sin2("conformance_ok"), X)
    assert ran == ["abstract_eval", "jit", "jvp", "jvp2", "vjp", "batching: 2 in_axes",
                   "dtypes: 4 accepted, 11 rejected"]
    ran = check_primitive(_double("conformance_linear_ok"), X)
    assert "transpose[0]" in ran


def test_wrong_jvp_is_caught_against_finite_differences():
    prim = _sin2("conformance_bad_jvp", jvp=defjvp(lambda g, ans, x: lax.mul(g, lax.cos(x))))
    with pytest.raises(AssertionError, match=r"check_primitive jvp of "
                       r"tests.conformance_bad_jvp\(f32\[2,3\]\): output 0 differs from "
                       "central finite differences"):
        check_primitive(prim, X)


def test_wrong_second_derivative_is_caught():
    # Right first derivative, but its own derivative is wrong (the factor is a constant).
    prim = _sin2("conformance_bad_jvp2", jvp=defjvp(
        lambda g, ans, x: lax.mul(g, lax.mul(lax.stop_gradient(lax.cos(x)), 2.0))))
    with pytest.raises(AssertionError, match="check_primitive jvp2 of tests.conformance_bad_jvp2"):
        check_primitive(prim, X)
    assert "jvp2" not in check_primitive(prim, X, jvp_order=1)


def test_wrong_transpose_fails_the_dot_product_test():
    prim = _double("conformance_bad_transpose", transpose=lambda ct, x: [ct])
    with pytest.raises(AssertionError, match=r"check_primitive transpose\[0\] of "
                       r"tests.conformance_bad_transpose.*dot-product test fails"):
        check_primitive(prim, X)


def test_transpose_with_a_cotangent_of_the_wrong_shape_is_caught():
    prim = _double("conformance_bad_ct_shape",
                   transpose=lambda ct, x: [lax.reduce_sum(lax.mul(ct, 2.0), (0,))])
    with pytest.raises(AssertionError, match=r"cotangent output 0 is f32\[3\], but "
                       r"abstract_eval predicts f32\[2,3\]"):
        check_primitive(prim, X)


def test_a_transpose_rule_that_raises_is_reported_with_the_linear_operands():
    def transpose(ct, x):
        assert not is_undefined_primal(x), "boom"
    prim = _double("conformance_raising_transpose", transpose=transpose)
    with pytest.raises(AssertionError, match=r"with operands \[0\] linear, the transpose rule "
                       "raised AssertionError: boom"):
        check_primitive(prim, X)


def test_linear_argnums_must_name_operands_the_primitive_is_linear_in():
    prim = _sin2("conformance_not_linear", transpose=lambda ct, x: [ct])
    with pytest.raises(AssertionError, match=r"linear_argnums=\(0,\), but the primitive is "
                       "not linear"):
        check_primitive(prim, X, linear_argnums=(0,))
    assert not any(c.startswith("transpose") for c in check_primitive(prim, X))


def test_wrong_batching_rule_is_caught_for_the_in_axes_it_mishandles():
    def batching(axis_data, args, dims):  # claims the batch dim is always first
        return prim.bind(*args), 0
    prim = _sin2("conformance_bad_batching", batching=batching)
    with pytest.raises(AssertionError, match=r"check_primitive batching of "
                       r"tests.conformance_bad_batching.*in_axes=\(2,\)"):
        check_primitive(prim, X)


def test_batching_rule_that_raises_names_the_in_axes():
    def batching(axis_data, args, dims):
        raise NotImplementedError("no batching here")
    prim = _sin2("conformance_raising_batching", batching=batching)
    with pytest.raises(AssertionError, match=r"with in_axes=\(0,\), vmap raised "
                       "NotImplementedError: no batching here"):
        check_primitive(prim, X)


def test_implementation_of_another_type_than_abstract_eval_says():
    prim = _sin2("conformance_bad_impl_type", impl=lambda x: (2 * np.sin(x)).astype(np.float64))
    with pytest.raises(AssertionError, match=r"check_primitive abstract_eval of "
                       r"tests.conformance_bad_impl_type.*the eager implementation's output 0 "
                       r"is f64\[2,3\], but abstract_eval predicts f32\[2,3\]"):
        check_primitive(prim, X, skip=("dtypes",))


def test_weak_types_are_compared():
    prim = standard_primitive("tests.conformance_weak", lambda x: x.update(weak_type=True),
                              lambda ctx, x: x, impl=lambda x: np.asarray(x),
                              batching=unary_batcher())
    with pytest.raises(AssertionError, match=r"f32\[2,3\], but abstract_eval predicts "
                       r"f32\[2,3\]\{weak\}"):
        check_primitive(prim, X)


def test_lowering_that_disagrees_with_the_implementation_is_caught():
    prim = _sin2("conformance_bad_lowering", impl=lambda x: 2 * np.sin(np.asarray(x)),
                 lower=hlo_rule("sine"))
    with pytest.raises(AssertionError, match=r"check_primitive jit of "
                       r"tests.conformance_bad_lowering.*jit vs eager, output 0 differs"):
        check_primitive(prim, X)


def _float_only(x: ShapedArray) -> ShapedArray:
    if not dtypes.issubdtype(x.dtype, np.floating):
        raise TypeError(f"float only, got {x.dtype}")
    return x


def test_dtypes_declared_must_be_those_abstract_eval_accepts():
    accepts_more = standard_primitive("tests.conformance_accepts_more", lambda x: x,
                                      lambda ctx, x: x, dtypes=FLOAT, batching=unary_batcher())
    with pytest.raises(AssertionError, match="abstract_eval accepts dtype bool, which the "
                       "primitive does not declare"):
        check_primitive(accepts_more, X)
    accepts_less = standard_primitive("tests.conformance_accepts_less", _float_only,
                                      lambda ctx, x: x, dtypes=INEXACT,
                                      batching=unary_batcher())
    with pytest.raises(AssertionError, match="abstract_eval rejects the declared dtype "
                       "complex64"):
        check_primitive(accepts_less, X)


def test_ill_typed_lowering_at_a_declared_dtype_names_the_dtype():
    prim = standard_primitive(
        "tests.conformance_f32_lowering", _float_only,
        lambda ctx, x: hlo.convert(mu.ir_type(ShapedArray(ctx.avals_in[0].shape, np.float32)),
                                   x),
        dtypes=FLOAT, batching=unary_batcher())
    with pytest.raises(AssertionError, match="lowering at dtype float16 raised ValueError"):
        check_primitive(prim, X)


def test_options_are_checked():
    with pytest.raises(TypeError, match="expected a Primitive, got function"):
        check_primitive(lax.sin, X)
    prim = _sin2("conformance_options")
    with pytest.raises(ValueError, match="unknown checks \\['jpv'\\] in skip"):
        check_primitive(prim, X, skip=("jpv",))
    with pytest.raises(ValueError, match="jvp_order must be 1 or 2"):
        check_primitive(prim, X, jvp_order=3)
    assert check_primitive(prim, X, skip=("jvp", "jvp2", "vjp", "batching", "dtypes")) == [
        "abstract_eval", "jit"]


def test_a_lowering_for_one_platform_only_is_checked_under_jit():
    # The linalg primitives lower on CPU only (LAPACK); jit must still be checked.
    prim = standard_primitive("tests.conformance_cpu_lowering", lambda x: x, None,
                              impl=lambda x: 2 * np.sin(np.asarray(x)),
                              batching=unary_batcher())
    prim.def_lowering(hlo_rule("sine"), platform="cpu")
    with pytest.raises(AssertionError, match=r"check_primitive jit of "
                       r"tests.conformance_cpu_lowering.*jit vs eager, output 0 differs"):
        check_primitive(prim, X)


def _times_constant(name: str, x_jvp):
    """x * c, whose jvp rule (like reduce_window's for its init values) accepts no
    tangent for c."""
    def jvp(primals, tangents):
        (x, c), (x_dot, c_dot) = primals, tangents
        if not isinstance(c_dot, Zero):
            raise TypeError("no tangent for c")
        return prim.bind(x, c), x_jvp(x_dot, c)
    prim = standard_primitive(f"tests.{name}", lambda x, c: x,
                              lambda ctx, x, c: hlo.multiply(x, c), jvp=jvp)
    return prim


def test_operands_not_differentiated_get_symbolic_zero_tangents():
    c = np.full_like(X, 1.5)
    prim = _times_constant("conformance_constant_operand", lambda t, c: lax.mul(t, c))
    with pytest.raises(TypeError, match="no tangent for c"):
        check_primitive(prim, X, c)
    assert "vjp" in check_primitive(prim, X, c, nondiff_argnums=(1,))
    wrong = _times_constant("conformance_constant_operand_bad", lambda t, c: t)
    with pytest.raises(AssertionError, match="check_primitive jvp of "
                       "tests.conformance_constant_operand_bad"):
        check_primitive(wrong, X, c, nondiff_argnums=(1,))


def _hermitian(n: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return (a + a.conj().T).astype(np.complex64)


def _projectors(v):
    """v_j v_jᴴ for each column v_j: what a phase of each eigenvector leaves alone."""
    return plax.numpy.einsum("ij,kj->jik", v, plax.numpy.conj(v))


EIGH = dict(lower=True, sort_eigenvalues=True, subset_by_index=None, algorithm=None)


def test_outputs_defined_up_to_a_gauge_are_checked_through_observe():
    a = _hermitian(3)
    # LAPACK fixes each eigenvector's phase one way, the jvp rule another: the
    # eigenvectors' own derivatives differ, their projectors' agree.
    with pytest.raises(AssertionError, match="check_primitive jvp of lax.eigh"):
        check_primitive(linalg.eigh_p, a, skip=("batching",), **EIGH)
    check_primitive(linalg.eigh_p, a, skip=("batching",),
                    observe=lambda v, w: (_projectors(v), w), **EIGH)
    eigh_jvp = linalg.eigh_p.get_rule("jvp")

    def jvp(primals, tangents, **params):
        outs, (v_dot, w_dot) = eigh_jvp(primals, tangents, **params)
        return outs, [lax.mul(v_dot, np.complex64(1.1)), w_dot]
    wrong = standard_primitive("tests.conformance_eigh_wrong_vectors",
                               linalg.eigh_p.abstract_eval, None, multiple_results=True,
                               jvp=jvp)
    wrong.def_lowering(linalg.eigh_p.get_rule("lowering", "cpu"), platform="cpu")
    with pytest.raises(AssertionError, match="check_primitive jvp of "
                       "tests.conformance_eigh_wrong_vectors.*output 0 differs"):
        check_primitive(wrong, a, observe=lambda v, w: (_projectors(v), w), **EIGH)


def test_empty_examples_transpose_only_declared_operands():
    # Every function to an empty output is linear, so linearity is not inferred.
    empty = np.zeros((0, 3), np.float32)
    prim = _double("conformance_empty")
    assert not any(c.startswith("transpose") for c in check_primitive(prim, empty))
    assert "transpose[0]" in check_primitive(prim, empty, linear_argnums=(0,))
