"""A symbolic size used as a value in shape-polymorphic export, where plax goes
beyond JAX 0.10.2 (which fails on these) or must fail as clearly: `scan` unrolled
over a symbolic axis, `scan(length=b)`, and the errors for sizes that have no value
(outside export) or that a feature needs known at trace time. The programs JAX
exports too are in tests/test_export_shape_ops.py's tables."""
import numpy as np
import pytest

import plax
from plax import export, lax
import plax.numpy as jnp


def _exported(fn):
    b, = export.symbolic_shape("b")
    return export.export(plax.jit(fn))(plax.ShapeDtypeStruct((b,), np.float32))


def _check_at_sizes(fn, sizes=(1, 2, 5)):
    exp = _exported(fn)
    for n in sizes:
        x = np.linspace(-1, 2, n, dtype=np.float32)
        for got, want in zip(exp.call(x), fn(x)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("unroll, reverse", [(2, False), (3, True)])
def test_scan_unrolled_over_a_symbolic_axis(unroll, reverse):
    """The loop takes `unroll` steps a trip, then a second loop the remainder (sizes
    below, at and above `unroll`)."""
    _check_at_sizes(lambda x: lax.scan(lambda c, r: (c * 0.5 + r, c - r), 1.0, x,
                                       unroll=unroll, reverse=reverse))


def test_scan_of_a_symbolic_length_without_xs():
    _check_at_sizes(lambda x: lax.scan(lambda c, _: (c + 1.0, c * 2.0), 0.0, None,
                                       length=x.shape[0]))


def test_a_symbolic_size_as_an_operand_is_a_weak_int_scalar():
    b, = export.symbolic_shape("b")
    out = plax.eval_shape(lambda x: lax.neg(x.shape[0]), plax.ShapeDtypeStruct((b,), np.float32))
    assert (out.shape, out.dtype, out.weak_type) == ((), np.int32, True)


def test_a_symbolic_size_outside_export_has_no_value():
    b, = export.symbolic_shape("b")
    for fn in (lambda: lax.add(b, 1), lambda: lax.convert_element_type(b, np.float32),
               lambda: jnp.array(b), lambda: lax.fori_loop(0, b, lambda i, c: c + i, 0),
               lambda: b / 2, lambda: 2 ** b, lambda: jnp.ones(3) * b):
        with pytest.raises(NotImplementedError,
                           match="symbolic dimension 'b' has a value only while"):
            fn()


def test_what_needs_a_size_known_at_trace_time():
    with pytest.raises(ValueError, match="unroll=True unrolls every iteration.*symbolic size b"):
        _exported(lambda x: lax.scan(lambda c, r: (c + r, c), 0.0, x, unroll=True))
    with pytest.raises(ValueError, match="fori_loop: unroll requires lower and upper bounds"):
        _exported(lambda x: lax.fori_loop(0, x.shape[0], lambda i, c: c + i, 0, unroll=2))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop or lax.fori_loop with dynamic"):
        _exported(plax.grad(lambda y: lax.fori_loop(0, y.shape[0], lambda i, c: c + y[i] ** 2,
                                                    0.0)))
    with pytest.raises(ValueError, match="integer bounds, got start=0.0"):
        _exported(lambda x: jnp.arange(0.0, x.shape[0]))
    with pytest.raises(ValueError, match="array split does not result in an equal division"):
        _exported(lambda x: jnp.split(x, 2))
