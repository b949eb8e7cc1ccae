"""Types inside `shard_map` and unreduced/reduced specs, against JAX 0.10.2 (JAX in a
subprocess; skipped where it is not installed).

Inside a shard_map body with check_vma, a value's type names the manual axes it
varies over (`float32[3]{V:i}`, `aval.manual_axis_type`), an ordinary operation on
values varying over different axes casts the others with `pvary`, and `psum` is
`psum_invariant`: the printed Jaxprs are JAX's. `PartitionSpec(..., unreduced=...,
reduced=...)` is accepted by `NamedSharding` and `device_put`, compared and hashed
as JAX's, and a `dot_general` asked for an unreduced result is typed `{U:Y}`.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from jax_differential import requires_jax, run_driver_in_jax
from plax import lax
from plax.sharding import AxisType, NamedSharding, PartitionSpec

pytestmark = requires_jax

# name: source of an expression over lib, jnp, lax, P, mesh (2x2 Auto 'i','j'),
# emesh (2x4 Explicit 'X','Y'), sm(f, in_specs, out_specs) and the arrays x, a, b
PROGRAMS = {
    "typeof_in_body": "probe(lambda v: str(lib.typeof(v)), P('i'))",
    "repr_in_body": "probe(lambda v: repr(lib.typeof(v)), P('i'))",
    "typeof_two_axes": "probe(lambda v: str(lib.typeof(v)), P(('i', 'j')))",
    "typeof_unsplit": "probe(lambda v: str(lib.typeof(v)), P())",
    "typeof_after_psum": "probe(lambda v: str(lib.typeof(lax.psum(v, 'i'))), P('i'))",
    "typeof_axis_index": "probe(lambda v: str(lib.typeof(lax.axis_index('j') + v)), P('i'))",
    "typeof_pvary": "probe(lambda v: str(lib.typeof(lax.pcast(v, 'j', to='varying'))), P('i'))",
    "typeof_no_check": "probe(lambda v: str(lib.typeof(v)), P('i'), check_vma=False)",
    "mat_varying": "probe(lambda v: sorted(lib.typeof(v).manual_axis_type.varying), P('i'))",
    "mat_fields": "probe(lambda v: [sorted(lib.typeof(v).mat.unreduced), "
                  "sorted(lib.typeof(v).mat.reduced)], P('i'))",
    "typeof_outside": "str(lib.typeof(sm(lambda v: v * 2, P('i'), P('i'))(x)))",
    "jaxpr_sin_mul_psum": "str(lib.make_jaxpr(sm(lambda v: lax.psum(jnp.sin(v) * 2, 'i'), "
                          "P('i'), P()))(x))",
    "jaxpr_psum_unvarying": "str(lib.make_jaxpr(sm(lambda v: lax.psum(v, 'i'), P(), P()))(x))",
    "jaxpr_pmean": "str(lib.make_jaxpr(sm(lambda v: lax.pmean(v, 'i'), P('i'), P()))(x))",
    "jaxpr_axis_index": "str(lib.make_jaxpr(sm(lambda v: v + lax.axis_index('i'), P('i'), "
                        "P('i')))(x))",
    "jaxpr_two_axes": "str(lib.make_jaxpr(sm(jnp.sin, P(('i', 'j')), P(('i', 'j'))))(x))",
    "jaxpr_ppermute": "str(lib.make_jaxpr(sm(lambda v: lax.ppermute(v, 'i', [(0, 1), (1, 0)]), "
                      "P('i'), P('i')))(x))",
    "jaxpr_all_gather": "str(lib.make_jaxpr(sm(lambda v: lax.all_gather(v, 'i'), P('i'), "
                        "P()))(x))",
    "jaxpr_no_check": "str(lib.make_jaxpr(sm(lambda v: v * 2, P('i'), P('i'), "
                      "check_vma=False))(x))",
    "jaxpr_mixed": "str(lib.make_jaxpr(lambda u, w: sm(lambda p, q: p * q + 1.0, "
                   "(P('i'), P()), P('i'))(u, w))(x, x[:4]))",
    "jaxpr_pmax": "str(lib.make_jaxpr(sm(lambda v: lax.pmax(v, 'i'), P('i'), P()))(x))",
    "jaxpr_psum_two_axes": "str(lib.make_jaxpr(sm(lambda v: lax.psum(v, ('i', 'j')), "
                           "P(('i', 'j')), P()))(x))",
    "jaxpr_cond": "str(lib.make_jaxpr(sm(lambda v: lax.cond(v.sum() > 0, jnp.sin, jnp.cos, v), "
                  "P('i'), P('i')))(x))",
    "jaxpr_inner_jit": "str(lib.make_jaxpr(sm(lambda v: lib.jit(lambda a: a * 2)(v), P('i'), "
                       "P('i')))(x))",
    "jaxpr_dot": "str(lib.make_jaxpr(sm(lambda v: jnp.dot(v, v), P('i'), P()))(x))",
    "jaxpr_ones": "str(lib.make_jaxpr(sm(lambda v: v + jnp.ones(4), P('i'), P('i')))(x))",
    # a loop carry must vary over the axes its output varies over (JAX's TypeError)
    "err_scan_carry_unvarying": "sm(lambda v: lax.scan(lambda c, a: (c + a, c * a), 0.0, v)[1], "
                                "P('i'), P('i'))(x)",
    "scan_carry_cast": "np.asarray(sm(lambda v: lax.scan(lambda c, a: (c + a, c * a), "
                       "lax.pcast(0.0, 'i', to='varying'), v)[1], P('i'), P('i'))(x)).tolist()",
    "err_fori_carry_unvarying": "sm(lambda v: lax.fori_loop(0, 3, lambda i, c: c + v.sum(), "
                                "0.0), P('i'), P('i'))(x)",
    "values_mixed": "np.asarray(sm(lambda p, q: lax.psum(p * q + 1.0, 'i'), (P('i'), P()), "
                    "P())(x[:4], x[:2])).tolist()",
    # unreduced and reduced specs
    "spec_repr": "repr(P('X', None, unreduced={'Y'}, reduced={'Z'}))",
    "spec_eq": "[P('X', unreduced={'Y'}) == P('X', unreduced={'Y'}), "
               "P('X', unreduced={'Y'}) == P('X'), P(reduced={'Y'}) == P(unreduced={'Y'}), "
               "hash(P('X', unreduced={'Y'})) == hash(P('X', unreduced={'Y'}))]",
    "sharding_repr": "repr(NamedSharding(emesh, P('X', None, unreduced={'Y'})))",
    "sharding_reduced": "repr(NamedSharding(emesh, P('X', reduced={'Y'})).spec)",
    "device_put_spec": "repr(lib.device_put(a, NamedSharding(emesh, "
                       "P('X', None, unreduced={'Y'}))).sharding.spec)",
    "dot_unreduced_type": "dot_type()",
    "dot_unreduced_spec": "in_emesh(lambda: repr(lib.jit(lambda u, w: jnp.dot(u, w, "
                          "out_sharding=P('X', None, unreduced={'Y'})))(*placed()).sharding.spec))",
    "dot_reduce_back": "in_emesh(lambda: np.allclose(lib.jit(lambda u, w: lib.sharding.reshard("
                       "jnp.dot(u, w, out_sharding=P('X', None, unreduced={'Y'})), "
                       "P('X', None)))(*placed()), a @ a))",
    "err_unreduced_times_scalar": "in_emesh(lambda: lib.jit(lambda u, w: jnp.dot(u, w, "
                                  "out_sharding=P('X', None, unreduced={'Y'})) * 2)(*placed()))",
    "err_unreduced_implicit_axis": "NamedSharding(mesh, P('i', unreduced={'j'}))",
    "err_overlap": "P('X', unreduced={'X'})",
}

DRIVER = """
def run(programs):
    mesh = lib.make_mesh((2, 2), ('i', 'j'), axis_types=(AxisType.Auto,) * 2)
    emesh = lib.make_mesh((2, 4), ('X', 'Y'), axis_types=(AxisType.Explicit,) * 2)
    x = jnp.arange(8.0)
    a = np.arange(64, dtype=np.float32).reshape(8, 8)

    def sm(f, in_specs, out_specs, check_vma=True):
        return lib.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                             check_vma=check_vma)

    def probe(fn, spec, check_vma=True):
        seen = []
        def body(v):
            seen.append(fn(v))
            return v
        sm(body, spec, spec, check_vma=check_vma)(x)
        return seen[0]

    def in_emesh(fn):
        with lib.set_mesh(emesh):
            return fn()

    def placed():
        return (lib.device_put(a, P('X', 'Y')), lib.device_put(a, P('Y', None)))

    def dot_type():
        seen = []
        def f(u, w):
            z = jnp.dot(u, w, out_sharding=P('X', None, unreduced={'Y'}))
            seen.append(str(lib.typeof(z)))
            return z
        in_emesh(lambda: lib.jit(f)(*placed()))
        return seen[0]

    answers = {}
    for name, source in programs.items():
        try:
            answers[name] = eval(source)
        except Exception as err:
            answers[name] = "error: " + type(err).__name__
    return answers
"""

_JAX_SIDE = """
import json, os, sys
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np
import jax as lib
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
""" + DRIVER + """
print(json.dumps(run(json.loads(sys.argv[1]))))
"""


@pytest.fixture(scope="module")
def answers():
    theirs = run_driver_in_jax(_JAX_SIDE, PROGRAMS)
    scope = dict(np=np, lib=plax, jnp=jnp, lax=lax, P=PartitionSpec, AxisType=AxisType,
                 NamedSharding=NamedSharding)
    exec(textwrap.dedent(DRIVER), scope)
    return scope["run"](PROGRAMS), theirs


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_as_jax(answers, name):
    mine, theirs = answers
    assert mine[name] == theirs[name], f"plax:\n{mine[name]}\nJAX:\n{theirs[name]}"


def test_the_programs_print_types_inside_the_body(answers):
    """Not vacuous: the answers compared name varying axes and unreduced axes."""
    mine, _ = answers
    assert mine["typeof_in_body"] == "float32[4]{V:i}"
    assert mine["typeof_two_axes"] == "float32[2]{V:(i,j)}"
    assert "psum_invariant" in mine["jaxpr_psum_unvarying"]
    assert mine["dot_unreduced_type"] == "float32[8@X,8]{U:Y}"


def test_shaped_array_fields():
    from plax.extend.core import ShapedArray
    from plax.extend.sharding import ManualAxisType
    aval = ShapedArray((3,), np.float32)
    assert aval.manual_axis_type is ManualAxisType() and aval.mat.empty
    varying = aval.update_manual_axis_type(ManualAxisType(varying={"i"}))
    assert str(varying) == "float32[3]{V:i}" and varying.vma == frozenset({"i"})
    assert varying.update(shape=(4,)).manual_axis_type is varying.manual_axis_type
    assert str(varying.to_tangent_aval()) == "float32[3]{V:i}"
    with pytest.raises(TypeError, match="ManualAxisType"):
        aval.update_manual_axis_type({"i"})
