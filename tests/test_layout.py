"""plax.experimental.layout: Layout/Format, Arrays' and executables' formats, Formats
in jit, device_put and with_sharding_constraint, and with_layout_constraint against
JAX (one subprocess); the part plax's runtime lacks (non-default layouts) raises
NotImplementedError."""
from __future__ import annotations

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.experimental.layout import Format, Layout, with_layout_constraint
from tests.jax_differential import requires_jax, run_driver_here, start_driver_in_jax

_DRIVER = r'''
import re

def error(thunk, length=45):
    try:
        thunk()
        return "ok"
    except Exception as err:
        return type(err).__name__ + ": " + str(err).split("\n")[0][:length]

def run(programs):
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    s = x.sharding
    compiled = jit(lambda a, b: (a * 2, b.sum())).lower(x, x[0]).compile()
    ins, _ = compiled.input_formats
    constrained = lambda v: with_layout_constraint(v * 2, Layout((0, 1)))
    to_format = lambda v: with_sharding_constraint(v * 2, Format(Layout((1, 0)), s)) + 1
    text = jit(constrained).lower(x).as_text()
    return {
        "array": repr(x.format.layout),
        "inputs": [repr(f.layout) for f in ins],
        "outputs": [repr(f.layout) for f in compiled.output_formats],
        "constraint": re.search(r"custom_call @LayoutConstraint.*?\}", text).group(0),
        "values": [np.asarray(jit(constrained)(x)).tolist(),
                   np.asarray(vmap(lambda v: with_layout_constraint(v, Layout((0,))))(x)).tolist(),
                   np.asarray(grad(lambda v: constrained(v).sum())(x)).tolist()],
        "same": np.asarray(device_put(x, Format(Layout((0, 1)), s))).tolist(),
        # with_sharding_constraint to a Format: its sharding, then its layout
        "sharding_constraint": [
            re.search(r"custom_call @LayoutConstraint\(%\d+\)(.*?\})",  # (JAX's has a
                      jit(to_format).lower(x).as_text()).group(1),  # one-device constraint)
            np.asarray(jit(to_format)(x)).tolist(),
            np.asarray(with_sharding_constraint(x, Format(Layout((0, 1)), s))).tolist()],
        "eq": [Layout((0, 1)) == Layout((0, 1)), Layout((0, 1)) == Layout((1, 0)),
               hash(Layout((1, 0))) == hash(Layout((1, 0))), repr(Layout.AUTO),
               repr(Layout((1, 0), ((8,),)).update(major_to_minor=(0, 1)))],
        "errors": [error(lambda: Format(Layout((0, 1)))), error(lambda: Format(3)),
                   error(lambda: Format(None, 3)),
                   error(lambda: jit(lambda v: with_layout_constraint(v, Layout((0,))))(x)),
                   error(lambda: with_layout_constraint(x, 3)),
                   error(lambda: with_layout_constraint(np.ones(2), Layout((0,)))),
                   error(lambda: device_put(x, Format(Layout.AUTO, s))),
                   error(lambda: jit(lambda v: v, in_shardings=Format(Layout((0, 1, 2)), s))(x),
                         20),
                   error(lambda: jit(lambda v: v, out_shardings=Format(Layout((0,)), s))(x),
                         18)],
        "auto": auto_formats(x),
        "default": np.asarray(jit(lambda v: v.T, in_shardings=Format(Layout((0, 1)), s),
                                  out_shardings=Format(Layout((0, 1)), s))(x)).tolist(),
    }

def auto_formats(x):
    """Compile for the layouts the compiler picks, then put the input in them."""
    auto = Format(Layout.AUTO)
    compiled = jit(lambda v: v * 2, in_shardings=auto, out_shardings=auto).lower(
        ShapeDtypeStruct(x.shape, x.dtype)).compile()
    (format,), _ = compiled.input_formats
    result = compiled(device_put(x, format))
    return [repr(format.layout), repr(compiled.output_formats.layout),
            np.asarray(result).tolist(), repr(result.format.layout)]
'''


@pytest.fixture(scope="module")
def jax_answers():
    return start_driver_in_jax(
        "import json, sys\nimport numpy as np\nimport jax.numpy as jnp\n"
        "from jax import ShapeDtypeStruct, device_put, grad, jit, vmap\n"
        "from jax.experimental.layout import Format, Layout, with_layout_constraint\n"
        "from jax.lax import with_sharding_constraint\n"
        + _DRIVER + "print(json.dumps(run(json.loads(sys.argv[1]))))\n", [])()


@requires_jax
def test_formats_constraints_and_errors_match_jax(jax_answers):
    got = run_driver_here(_DRIVER, [], vmap=plax.vmap, Format=Format, Layout=Layout,
                          with_layout_constraint=with_layout_constraint,
                          with_sharding_constraint=plax.lax.with_sharding_constraint,
                          ShapeDtypeStruct=plax.ShapeDtypeStruct)
    assert got == jax_answers


def test_a_deleted_array_has_no_layout():
    x = jnp.ones((2, 2))
    x.delete()
    assert x.format.layout is None and x.format.sharding == x.sharding


def test_formats_without_a_layout_are_their_shardings():
    x = jnp.arange(4.0, dtype=jnp.float32)
    f = plax.jit(lambda v: v + 1, in_shardings=Format(None, x.sharding),
                 out_shardings=Format())
    np.testing.assert_allclose(f(x), np.arange(4.0) + 1)
    assert plax.device_put(x, Format(None, x.sharding)).sharding == x.sharding


def test_what_plax_cannot_lay_out_yet_is_refused():
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    with pytest.raises(NotImplementedError, match="not the backend's default"):
        plax.jit(lambda v: v, in_shardings=Format(Layout((1, 0)), x.sharding))(x)
    with pytest.raises(NotImplementedError, match="not the backend's default"):
        plax.jit(lambda v: v.T, out_shardings=Format(Layout((1, 0)), x.sharding))(x)
    with pytest.raises(NotImplementedError, match="not built"):
        plax.device_put(x, Format(Layout((1, 0)), x.sharding))
    with pytest.raises(NotImplementedError, match="non-default layouts"):
        with_layout_constraint(x, Layout((1, 0)))
