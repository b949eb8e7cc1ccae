"""The Jaxpr IR: printing, type checking, DCE and evaluation, on hand-built programs."""
import numpy as np
import pytest

from plax.extend import rules_of
from plax.extend.core import (
    ClosedJaxpr,
    Jaxpr,
    JaxprDebugInfo,
    JaxprEqn,
    JaxprTypeError,
    Literal,
    Primitive,
    RuleAlreadyDefinedError,
    ShapedArray,
    Var,
    check_jaxpr,
    dce_closed_jaxpr,
    dce_jaxpr,
)

F32_3 = ShapedArray((3,), np.float32)
F32 = ShapedArray((), np.float32)

neg_p = Primitive("tests.test_neg")
neg_p.def_abstract_eval(lambda x: x)
pair_p = Primitive("tests.test_pair", multiple_results=True)
pair_p.def_abstract_eval(lambda x: [x, x])


def _add_abstract_eval(x, y):
    if x.shape != y.shape:
        raise TypeError(f"test_add got incompatible shapes {x.shape}, {y.shape}")
    return x


add_p = Primitive("tests.test_add")
add_p.def_abstract_eval(_add_abstract_eval)


def _dbg(n_in, n_out):
    return JaxprDebugInfo("test", "f at file.py:1", tuple(f"x{i}" for i in range(n_in)),
                          tuple(f"result[{i}]" for i in range(n_out)))


def _chain():
    a, b, c = Var(F32_3), Var(F32_3), Var(F32_3)
    eqn = JaxprEqn([a], [b], neg_p, {})
    eqn2 = JaxprEqn([b, a], [c], add_p, {})
    return Jaxpr([], [a], [c], [eqn, eqn2], debug_info=_dbg(1, 1)), (a, b, c)


def test_printer_one_line_and_multiline():
    jaxpr, _ = _chain()
    # JAX's layout: one line when it fits in 80 columns, else one equation a line
    assert str(jaxpr) == ("{ lambda ; a:f32[3]. let\n    b:f32[3] = test_neg a\n"
                          "    c:f32[3] = test_add b a\n  in (c,) }")
    short = Jaxpr([], jaxpr.invars, jaxpr.eqns[0].outvars, jaxpr.eqns[:1])
    assert str(short) == "{ lambda ; a:f32[3]. let b:f32[3] = test_neg a in (b,) }"
    vs = [Var(F32) for _ in range(6)]
    eqns = [JaxprEqn([vs[i]], [vs[i + 1]], neg_p, {}) for i in range(5)]
    text = str(Jaxpr([], vs[:1], vs[-1:], eqns))
    assert text.splitlines()[0] == "{ lambda ; a:f32[]. let"
    assert text.splitlines()[-1] == "  in (f,) }"


def test_printer_shows_params_literals_and_constvars():
    k, x, y = Var(F32), Var(F32), Var(F32)
    eqn = JaxprEqn([x, Literal(2.0, F32)], [y], add_p, {"flag": True})
    text = str(Jaxpr([k], [x], [y], [eqn]))
    assert text == ("{ lambda a:f32[]; b:f32[]. let\n"
                    "    c:f32[] = test_add[flag=True] b 2.0:f32[]\n  in (c,) }")
    assert repr(eqn.invars[1]) == "Literal(2.0)"  # JAX's repr; printed typed, as above


def test_check_jaxpr_accepts_well_formed():
    jaxpr, _ = _chain()
    check_jaxpr(jaxpr)


def test_check_jaxpr_rejects_use_before_definition():
    jaxpr, (a, b, c) = _chain()
    bad = jaxpr.replace(eqns=jaxpr.eqns[::-1])
    with pytest.raises(JaxprTypeError, match="used before it is defined"):
        check_jaxpr(bad)


def test_check_jaxpr_rejects_wrong_output_type():
    a, b = Var(F32_3), Var(ShapedArray((4,), np.float32))
    with pytest.raises(JaxprTypeError, match=r"produces f32\[3\] but its output variable "
                                             r"has type f32\[4\]"):
        check_jaxpr(Jaxpr([], [a], [b], [JaxprEqn([a], [b], neg_p, {})]))


def test_check_jaxpr_rejects_failing_abstract_eval():
    a, b, c = Var(F32_3), Var(ShapedArray((4,), np.float32)), Var(F32_3)
    with pytest.raises(JaxprTypeError, match="incompatible shapes"):
        check_jaxpr(Jaxpr([], [a, b], [c], [JaxprEqn([a, b], [c], add_p, {})]))


def test_debug_info_counts_enforced():
    a = Var(F32)
    with pytest.raises(ValueError):
        Jaxpr([], [a], [a], [], debug_info=_dbg(2, 1))


def test_dce_prunes_outputs_inputs_and_debug_info_in_lockstep():
    x, y, u, v = Var(F32), Var(F32), Var(F32), Var(F32)
    eqns = [JaxprEqn([x], [u], neg_p, {}), JaxprEqn([y], [v], neg_p, {})]
    jaxpr = Jaxpr([], [x, y], [u, v], eqns, debug_info=_dbg(2, 2))
    pruned, used_inputs = dce_jaxpr(jaxpr, [False, True])
    assert used_inputs == [False, True]
    assert len(pruned.eqns) == 1 and pruned.invars == [y] and pruned.outvars == [v]
    assert pruned.debug_info.arg_names == ("x1",)
    assert pruned.debug_info.result_paths == ("result[1]",)
    check_jaxpr(pruned)
    kept, used = dce_jaxpr(jaxpr, [False, True], instantiate=True)
    assert used == [True, True] and kept.debug_info.arg_names == ("x0", "x1")


def test_dce_closed_jaxpr_drops_unread_constants():
    k1, k2, x, u, w = Var(F32), Var(F32), Var(F32), Var(F32), Var(F32)
    eqns = [JaxprEqn([k1, x], [u], add_p, {}), JaxprEqn([k2, x], [w], add_p, {})]
    closed = ClosedJaxpr(Jaxpr([k1, k2], [x], [u, w], eqns), [1.0, 2.0])
    pruned, _ = dce_closed_jaxpr(closed, [True, False])
    assert pruned.consts == [1.0] and pruned.jaxpr.constvars == [k1]


def test_multiple_results_equation():
    x, p, q = Var(F32), Var(F32), Var(F32)
    jaxpr = Jaxpr([], [x], [p, q], [JaxprEqn([x], [p, q], pair_p, {})])
    check_jaxpr(jaxpr)
    assert "b:f32[] c:f32[] = test_pair a" in str(jaxpr)


def test_rule_table_owner_and_duplicates():
    prim = Primitive("tests.test_rules")
    prim.def_abstract_eval(lambda x: x)
    assert rules_of(prim) == {"abstract_eval": "tests" if __name__.startswith("tests")
                              else __name__.split(".")[0]}
    with pytest.raises(RuleAlreadyDefinedError, match="already has a abstract_eval rule"):
        prim.def_abstract_eval(lambda x: x)
    replacement = lambda x: x  # noqa: E731
    prim.define_rule("abstract_eval", replacement, override=True)
    assert prim.get_rule("abstract_eval") is replacement
    prim.def_lowering(lambda ctx, x: x, platform="cuda")
    assert prim.get_rule("lowering", "cuda") is not None
    assert prim.get_rule("lowering", "cpu") is None


def test_missing_abstract_eval_is_a_clear_error():
    prim = Primitive("tests.test_no_rules")
    with pytest.raises(NotImplementedError, match="test_no_rules"):
        prim.abstract_eval(F32)
