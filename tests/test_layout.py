"""plax.experimental.layout: Layout/Format, Arrays' and executables' formats, Formats
in jit, device_put and with_sharding_constraint, with_layout_constraint, and arrays in
other layouts than the default (column-major on CPU: made, computed on, checked
against what an executable takes) against JAX. Both run in subprocesses: a process
where Arrays may have other layouts signs their layouts into jit's cache keys from
then on."""
from __future__ import annotations

import numpy as np

import plax
import plax.numpy as jnp
from plax.experimental.layout import Format
from tests.jax_differential import requires_jax, start_driver_in_jax

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
        "other_layouts": other_layouts(x),
        "default": np.asarray(jit(lambda v: v.T, in_shardings=Format(Layout((0, 1)), s),
                                  out_shardings=Format(Layout((0, 1)), s))(x)).tolist(),
    }

def other_layouts(x):
    """Column-major arrays: made by device_put, jit's out_shardings and
    with_layout_constraint; computed on eagerly and by jit (which compiles for a
    committed one's layout); copied into the layout an executable takes (uncommitted
    and host values) or refused (committed)."""
    s = x.sharding
    col = Format(Layout((1, 0)), s)
    y = device_put(np.asarray(x), col)
    f = jit(lambda v: v * 2 + v[0])
    takes_col = jit(lambda v: v.T @ v, in_shardings=col)
    compiled = jit(lambda v: v + 1).lower(x).compile()
    made = [y, jit(lambda v: v * 1, out_shardings=col)(x),
            with_layout_constraint(x, Layout((1, 0))), with_layout_constraint(y, Layout((0, 1)))]
    return {
        "made": [[v.format.layout.major_to_minor, v.committed, np.asarray(v).tolist()]
                 for v in made],
        "computed": [np.asarray(v).tolist() for v in (y + 1, f(x), f(y), f(y), f(x))],
        "compiled_for": repr(jit(lambda v: v * 2).lower(y).compile().input_formats),
        "taken": [np.asarray(takes_col(v)).tolist() for v in (np.asarray(x), x, y)],
        "refused": [error(lambda: takes_col(device_put(x, s)), 80),
                    error(lambda: compiled(y), 300),
                    error(lambda: jit(lambda v: v, in_shardings=Format(Layout.AUTO)).lower(y),
                          95)],
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


_IMPORTS = """
import json, sys
import numpy as np
import {lib}.numpy as jnp
from {lib} import ShapeDtypeStruct, device_put, grad, jit, vmap
from {lib}.experimental.layout import Format, Layout, with_layout_constraint
from {lib}.lax import with_sharding_constraint
"""


def _answers(lib: str):
    return start_driver_in_jax(_IMPORTS.format(lib=lib) + _DRIVER
                               + "print(json.dumps(run(json.loads(sys.argv[1]))))\n", [])


@requires_jax
def test_formats_constraints_and_errors_match_jax():
    theirs, mine = _answers("jax"), _answers("plax")
    assert mine() == theirs()


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
