"""Comparisons in IEEE total order (-NaN < -inf < ... < -0 < 0 < ... < inf < NaN):
`eq_to_p`, `le_to_p`, `lt_to_p`, as JAX names them. Sorting and searching compare
this way; for integers they are the ordinary comparisons."""
from __future__ import annotations

from plax.extend.ad import defjvp
from plax.extend.constructors import ANY, ORDERED, binary, elementwise_lowering, to_bool
from plax.extend.mlir import mu


def _total_order(direction: str):
    @elementwise_lowering
    def lower(ctx, x, y):
        return mu.compare(x, y, direction, ctx.avals_in[0].dtype, total_order=True)
    lower.__name__ = f"lower_{direction.lower()}_to"
    return lower


eq_to_p = binary("lax.eq_to", dtypes=ANY, lower=_total_order("EQ"), result_dtype=to_bool,
                 jvp=defjvp(None, None))
le_to_p = binary("lax.le_to", dtypes=ORDERED, lower=_total_order("LE"), result_dtype=to_bool,
                 jvp=defjvp(None, None))
lt_to_p = binary("lax.lt_to", dtypes=ORDERED, lower=_total_order("LT"), result_dtype=to_bool,
                 jvp=defjvp(None, None))
