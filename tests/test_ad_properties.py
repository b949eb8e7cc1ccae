"""Properties of differentiation on random small programs built from primitives:
jvp is linear in the tangent, vjp is the transpose of jvp
(`<u, jvp(v)> == <vjp(u), v>`), and the Jaxprs of their composition check.

Programs run eagerly, so every primitive is compiled once per shape and shared by
all examples (compilation is the cost on CI)."""
import numpy as np
from hypothesis import given, strategies as st

import plax
from plax import lax
from plax.extend.core import check_jaxpr

UNARY = [lax.sin, lax.cos, lax.tanh, lax.logistic, lax.neg, lax.square,
         lambda x: lax.exp(lax.mul(x, 0.5)), lambda x: lax.log1p(lax.square(x)),
         lambda x: lax.cumsum(x), lambda x: lax.rev(x, (0,))]
BINARY = [lax.add, lax.sub, lax.mul, lambda a, b: lax.div(a, lax.add(lax.square(b), 1.0)),
          lambda a, b: lax.atan2(a, lax.add(lax.square(b), 1.0))]
N = 3

# A program: steps (op, operand registers), each appending one register to the two
# inputs; the output is the last register and the sum of all of them.
steps = st.lists(st.tuples(st.integers(0, len(UNARY) + len(BINARY) - 1),
                           st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=5)
vectors = st.lists(st.floats(-1.0, 1.0, width=32), min_size=N, max_size=N).map(
    lambda v: np.array(v, np.float32))


def program(prog):
    def f(x, y):
        regs = [x, y]
        for op, i, j in prog:
            a, b = regs[i % len(regs)], regs[j % len(regs)]
            regs.append(UNARY[op](a) if op < len(UNARY) else BINARY[op - len(UNARY)](a, b))
        total = regs[0]
        for r in regs[1:]:
            total = lax.add(total, r)
        return regs[-1], total
    return f


def _dot(xs, ys) -> float:
    return float(sum(np.vdot(np.asarray(a, np.float64), np.asarray(b, np.float64))
                     for a, b in zip(xs, ys)))


@given(steps, vectors, vectors, vectors, vectors, st.floats(-2.0, 2.0, width=32))
def test_jvp_is_linear_in_the_tangent(prog, x, y, u, v, alpha):
    f = program(prog)
    _, f_jvp = plax.linearize(f, x, y)
    tu, tv = f_jvp(u, v), f_jvp(v, u)
    combined = f_jvp(np.float32(alpha) * u + v, np.float32(alpha) * v + u)
    for got, a, b in zip(combined, tu, tv):
        np.testing.assert_allclose(got, alpha * np.asarray(a) + np.asarray(b),
                                   rtol=1e-4, atol=1e-4)
    # linearize agrees with jvp.
    _, t = plax.jvp(f, (x, y), (u, v))
    for a, b in zip(t, tu):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@given(steps, vectors, vectors, vectors, vectors, vectors, vectors)
def test_vjp_is_the_transpose_of_jvp(prog, x, y, u1, u2, v1, v2):
    f = program(prog)
    _, t = plax.jvp(f, (x, y), (v1, v2))
    _, f_vjp = plax.vjp(f, x, y)
    ct = f_vjp((u1, u2))
    lhs, rhs = _dot((u1, u2), t), _dot(ct, (v1, v2))
    assert np.isclose(lhs, rhs, rtol=1e-3, atol=1e-3), (lhs, rhs)


@given(steps)
def test_grad_jaxprs_check_and_keep_names(prog):
    f = program(prog)
    x = np.linspace(-0.5, 0.5, N, dtype=np.float32)
    closed = plax.make_jaxpr(plax.grad(lambda x, y: lax.reduce_sum(f(x, y)[1], (0,)),
                                       (0, 1)))(x, x)
    check_jaxpr(closed)
    assert closed.jaxpr.debug_info.arg_names == ("x", "y")
