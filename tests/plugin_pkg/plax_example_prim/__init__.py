"""A third-party primitive package, as an outside author would write one.

`plax` finds it through the `plax.primitives` entry point (see the test that builds
its dist-info): `plax.extend.list_primitives()` lists `softclip` without this module
being imported first, `rules_of` names this package as the rule owner, and
`make_jaxpr` traces it like any standard primitive.
"""
from plax.extend import Primitive, ShapedArray

softclip_p = Primitive("plax_example_prim.softclip")


@softclip_p.def_abstract_eval
def _softclip_abstract_eval(x: ShapedArray, *, limit: float) -> ShapedArray:
    if x.dtype.kind != "f":
        raise TypeError(f"softclip requires a floating-point input, got {x.dtype.name}")
    return x


def softclip(x, limit: float = 1.0):
    """Smoothly clip `x` to (-limit, limit)."""
    return softclip_p.bind(x, limit=float(limit))
