"""lax.cond/switch/while_loop/fori_loop/scan/map: values against NumPy, staging,
lowering, jit, errors and debug info."""
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from plax.extend.core import check_jaxpr


def test_cond_picks_branch_and_accepts_int_predicates():
    f = lambda p, x: lax.cond(p, lambda y: y + 1.0, lambda y: y - 1.0, x)  # noqa: E731
    assert float(f(True, 3.0)) == 4.0
    assert float(f(False, 3.0)) == 2.0
    assert float(f(np.int32(-2), 3.0)) == 4.0  # nonzero int: true
    assert float(f(np.int32(0), 3.0)) == 2.0


def test_cond_with_pytree_operands_under_jit():
    def f(p, d):
        return lax.cond(p, lambda a, b: {"s": a["x"] + b}, lambda a, b: {"s": a["x"] * b},
                        d, 2.0)
    jf = plax.jit(f)
    x = np.arange(3.0, dtype=np.float32)
    np.testing.assert_allclose(jf(True, {"x": x})["s"], x + 2)
    np.testing.assert_allclose(jf(False, {"x": x})["s"], x * 2)


def test_switch_clamps_index():
    branches = [lambda x: x, lambda x: x * 2.0, lambda x: x * 3.0]
    f = plax.jit(lambda i, x: lax.switch(i, branches, x))
    assert [float(f(i, 1.0)) for i in (-5, 0, 1, 2, 7)] == [1.0, 1.0, 2.0, 3.0, 3.0]


def test_while_and_fori_loops():
    def collatz_steps(n):
        return lax.while_loop(lambda c: c[0] != 1,
                              lambda c: (jnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1),
                                         c[1] + 1), (n, 0))[1]
    assert int(plax.jit(collatz_steps)(27)) == 111
    poly = lambda x: lax.fori_loop(0, 4, lambda i, acc: acc * x + (i + 1.0), 0.0)  # noqa: E731
    np.testing.assert_allclose(poly(2.0), np.polyval([1, 2, 3, 4], 2.0))
    traced = plax.jit(lambda n, x: lax.fori_loop(0, n, lambda i, acc: acc * x, 1.0))
    assert float(traced(5, 2.0)) == 32.0
    # Static bounds become a scan (reverse-mode friendly); traced bounds a while.
    assert "scan" in str(plax.make_jaxpr(poly)(2.0))
    assert "while" in str(plax.make_jaxpr(lambda n: lax.fori_loop(0, n, lambda i, a: a, 0))(3))


@pytest.mark.parametrize("reverse,unroll", [(False, 1), (True, 2), (False, True)])
def test_scan_matches_python_loop(reverse, unroll):
    xs = {"a": np.arange(5.0, dtype=np.float32),
          "b": np.arange(10.0, dtype=np.float32).reshape(5, 2)}

    def body(c, x):
        c = c * 0.5 + x["a"] + x["b"].sum()
        return c, (c, x["b"] * c)

    carry, (ys, zs) = lax.scan(body, np.float32(1.0), xs, reverse=reverse, unroll=unroll)
    c, want_ys, want_zs = np.float32(1.0), [], []
    order = range(4, -1, -1) if reverse else range(5)
    for i in order:
        c, (y, z) = body(c, {"a": xs["a"][i], "b": xs["b"][i]})
        want_ys.append(y)
        want_zs.append(z)
    if reverse:
        want_ys, want_zs = want_ys[::-1], want_zs[::-1]
    np.testing.assert_allclose(carry, c, rtol=1e-6)
    np.testing.assert_allclose(ys, np.array(want_ys), rtol=1e-6)
    np.testing.assert_allclose(zs, np.array(want_zs), rtol=1e-6)


def test_scan_without_xs_and_zero_length():
    carry, ys = lax.scan(lambda c, _: (c + 1, c * 2), 0, None, length=3)
    assert int(carry) == 3 and list(np.asarray(ys)) == [0, 2, 4]
    carry, ys = lax.scan(lambda c, x: (c + x.sum(), x), np.float32(2.0),
                       np.zeros((0, 2), np.float32))
    assert float(carry) == 2.0 and ys.shape == (0, 2)


def test_scan_promotes_weak_init_like_jax():
    carry, _ = lax.scan(lambda c, x: (c + x, None), 0, np.arange(3.0, dtype=np.float32))
    assert carry.dtype == np.float32 and not carry.weak_type


@pytest.mark.parametrize("batch_size", [None, 2])
def test_map(batch_size):
    xs = np.arange(10.0, dtype=np.float32).reshape(5, 2)
    out = lax.map(lambda x: (x ** 2).sum(), xs, batch_size=batch_size)
    np.testing.assert_allclose(out, (xs ** 2).sum(1))


def test_staged_equations_carry_closed_jaxprs_with_names():
    w = np.float32(3.0)

    def body(carry, x):
        return carry * w + x, carry

    closed = plax.make_jaxpr(lambda xs: lax.scan(body, np.float32(0.0), xs))(np.ones(4, np.float32))
    check_jaxpr(closed.jaxpr)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
    dbg = eqn.params["jaxpr"].jaxpr.debug_info
    assert dbg.func_name == "body"
    assert dbg.arg_names == ("carry", "x")
    assert dbg.result_paths == ("result[0]", "result[1]")
    text = plax.jit(lambda xs: lax.scan(body, np.float32(0.0), xs)).lower(
        np.ones(4, np.float32)).as_text()
    assert "stablehlo.while" in text and "func.func private @closed_call" in text  # (JAX's name)


def test_cond_lowers_to_a_case_of_its_branches_ops():
    """As JAX's: each branch's ops in its region of the case (no call), located under
    `cond/branch_<k>_fun` (branch 0 the false one)."""
    def on_true(x):
        return jnp.sin(x)

    def on_false(x):
        return jnp.cos(x)
    lowered = plax.jit(lambda p, x: lax.cond(p, on_true, on_false, x)).lower(True, 1.0)
    text = lowered.as_text()
    assert "stablehlo.case" in text and "func.call" not in text and "func.func private" not in text
    assert text.index("stablehlo.cosine") < text.index("stablehlo.sine")
    located = lowered.as_text(debug_info=True)
    assert '"jit(<lambda>)/cond/branch_0_fun/cos"' in located
    assert '"jit(<lambda>)/cond/branch_1_fun/sin"' in located


def test_branch_type_mismatch_names_both_sides():
    """JAX's message: both functions and where they are defined, then each differing
    output by its path."""
    def on_true(x):
        return {"a": jnp.zeros(3)}

    def on_false(x):
        return {"a": jnp.zeros(2)}
    with pytest.raises(TypeError) as info:
        lax.cond(True, on_true, on_false, 1.0)
    line = on_true.__code__.co_firstlineno
    assert str(info.value) == (
        "cond branches must have equal output types but they differ.\n\n"
        f"true_fun is on_true at {__file__}:{line}\n"
        f"false_fun is on_false at {__file__}:{line + 3}\n\n"
        "The output of true_fun at path ['a'] has type float32[3] but the corresponding "
        "output of false_fun has type float32[2], so the shapes do not match.\n\n"
        "Revise true_fun and/or false_fun so that all output types match.")
    with pytest.raises(TypeError, match="cond branch outputs must have the same pytree "
                                        "structure"):
        lax.cond(True, lambda x: (x, x), lambda x: x, 1.0)
    with pytest.raises(TypeError, match=r"switch branches must have equal output types(.|\n)*"
                                        r"output of branch 0 has type float32\[\] but the "
                                        r"corresponding output of branch1 has type int32\[\], "
                                        r"so the dtypes do not match"):
        lax.switch(0, [lambda x: x, lambda x: 1], np.float32(1.0))


def test_predicate_errors():
    with pytest.raises(TypeError, match=r"Pred must be a scalar, got bool\[2\]"):
        lax.cond(np.array([True, False]), lambda: 1.0, lambda: 2.0)
    with pytest.raises(TypeError, match="Index type must be an integer"):
        lax.switch(1.0, [lambda: 1.0, lambda: 2.0])
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        lax.while_loop(lambda c: c, lambda c: c + 1.0, 1.0)


def test_carry_type_change_names_the_carry_path():
    """JAX's message: the carry named by the body's parameter and the leaf's path."""
    with pytest.raises(TypeError) as info:
        lax.scan(lambda c, x: ({"h": c["h"] * x}, None), {"h": np.float32(1.0)},
                 np.ones((3, 2), np.float32))
    assert str(info.value) == (
        "scan body function carry input and carry output must have equal types, but they "
        "differ:\n\nThe input carry component c['h'] has type float32[] but the "
        "corresponding output carry component has type float32[2], so the shapes do not "
        "match.\n\nRevise the function so that all output types match the corresponding "
        "input types.")
    with pytest.raises(TypeError, match=r"while_loop body function carry input and carry "
                                        r"output must have equal types(.|\n)*input carry "
                                        r"component state\[1\] has type int32\[\].*float32"):
        lax.while_loop(lambda c: c[0] < 3, lambda state: (state[0] + 1, state[1] * 1.5),
                       (0, np.int32(1)))
    with pytest.raises(TypeError, match=r"component loop_carry\[1\] has type int32\[\] but "
                                        r"the corresponding output carry component has type "
                                        r"float32\[\], so the dtypes do not match"):
        lax.fori_loop(0, 3, lambda i, c: c * 1.5, np.int32(1))
    with pytest.raises(TypeError, match="must have the same pytree structure"):
        lax.scan(lambda c, x: ((c, c), None), np.float32(1.0), None, length=2)


def test_length_errors():
    with pytest.raises(ValueError, match=r"`length` argument of 4 which disagrees with "
                                         r"leading axis sizes xs\[0\].shape\[0\]=3"):
        lax.scan(lambda c, x: (c, x), 0.0, (np.ones(3), np.ones(3)), length=4)
    with pytest.raises(ValueError, match=r"different leading axis sizes: xs\['a'\].shape\[0\]=3, "
                                         r"xs\['b'\].shape\[0\]=2"):
        lax.scan(lambda c, x: (c, x), 0.0, {"a": np.ones(3), "b": np.ones(2)})
    with pytest.raises(ValueError, match="no values to scan over"):
        lax.scan(lambda c, x: (c, x), 0.0, None)


def test_eager_calls_reuse_the_traced_jaxpr():
    def body(c, x):
        return c + x, c
    xs = np.ones(3, np.float32)
    j1 = plax.make_jaxpr(lambda xs: lax.scan(body, np.float32(0.0), xs))(xs)
    j2 = plax.make_jaxpr(lambda xs: lax.scan(body, np.float32(0.0), xs))(xs)
    assert j1.eqns[0].params["jaxpr"] is j2.eqns[0].params["jaxpr"]


def test_nested_control_flow():
    def inner(c, x):
        return lax.cond(x > 0, lambda v: v + x, lambda v: v - x, c), c

    def outer(xs):
        return lax.scan(lambda c, row: (lax.scan(inner, c, row)[0], c), 0.0, xs)[0]
    xs = np.array([[1.0, -2.0], [3.0, -4.0]], np.float32)
    assert float(plax.jit(outer)(xs)) == 10.0


@pytest.mark.parametrize("n,reverse", [(1, False), (6, False), (7, True)])
def test_associative_scan_cumsum(n, reverse):
    x = np.arange(1.0, 2 * n + 1, dtype=np.float32).reshape(2, n)
    got = plax.jit(lambda x: lax.associative_scan(lax.add, x, reverse=reverse, axis=1))(x)
    want = np.flip(np.cumsum(np.flip(x, 1), 1), 1) if reverse else np.cumsum(x, 1)
    np.testing.assert_allclose(got, want)


def test_associative_scan_linear_recurrence_pytree():
    # h_t = a_t * h_{t-1} + b_t as a scan of affine maps composed associatively.
    rng = np.random.RandomState(1)
    a, b = rng.rand(5).astype(np.float32), rng.randn(5).astype(np.float32)
    compose = lambda f, g: (f[0] * g[0], f[1] * g[0] + g[1])  # noqa: E731
    _, h = plax.jit(lambda a, b: lax.associative_scan(compose, (a, b)))(a, b)
    want, acc = [], 0.0
    for t in range(5):
        acc = a[t] * acc + b[t]
        want.append(acc)
    np.testing.assert_allclose(h, want, rtol=1e-5)
    with pytest.raises(ValueError, match="same first dimension"):
        lax.associative_scan(compose, (a, b[:3]))


def test_dce_prunes_unused_scan_outputs_and_cond_inputs():
    from plax.extend.core import dce_jaxpr

    def f(xs, y):
        carry, (a, b) = lax.scan(lambda c, x: (c + x, (c * 2.0, jnp.sin(x))), 0.0, xs)
        z = lax.cond(y > 0, lambda u, v: u + 1.0, lambda u, v: u - 1.0, y, xs)
        return carry, a, z
    closed = plax.make_jaxpr(f)(np.ones(3, np.float32), 1.0)
    pruned, _ = dce_jaxpr(closed.jaxpr, [True, False, True])
    check_jaxpr(pruned)
    scan_eqn = next(e for e in pruned.eqns if e.primitive.name == "scan")
    assert len(scan_eqn.outvars) == 1  # only the carry is left
    assert not any(e.primitive.name == "sin" for e in scan_eqn.params["jaxpr"].eqns)
    cond_eqn = next(e for e in pruned.eqns if e.primitive.name == "cond")
    assert len(cond_eqn.invars) == 2  # the index and y; xs is read by no branch


def test_dce_keeps_inputs_of_a_loop_whose_unused_carry_it_drops():
    """The fori_loop counter feeds no output: pruning it must keep the loop's input."""
    from plax.extend.core import dce_jaxpr
    closed = plax.make_jaxpr(lambda x: lax.fori_loop(0, 10, lambda i, x: x * 2.0, x))(1.0)
    pruned, kept = dce_jaxpr(closed.jaxpr, [True])
    assert kept == [True] and len(pruned.eqns[0].invars) == 1
    assert float(plax.jit(lambda x: lax.fori_loop(0, 10, lambda i, x: x * 2.0, x))(1.0)) == 1024
