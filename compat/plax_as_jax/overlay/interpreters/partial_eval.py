"""`jax.interpreters.partial_eval`: splitting a function into what is known now and
what waits for unknown inputs (flax's `partial_eval_by_shape`, `lazy_init`), on
plax's `partial_eval_jaxpr`."""
from __future__ import annotations

from typing import NamedTuple

from plax.extend.ad import partial_eval_jaxpr
from plax.extend.core import get_aval, jaxpr_as_fun, stage_flat
from plax_transforms.partial_eval import JaxprTracer  # noqa: F401  (isinstance checks)

PLAX_MODULE = None


class PartialVal(NamedTuple):
    """An unknown value of type `aval` (`const` None), or a known `const`."""
    aval: object
    const: object

    @classmethod
    def known(cls, const):
        return cls(None, const)

    @classmethod
    def unknown(cls, aval):
        return cls(aval, None)

    def is_known(self) -> bool:
        return self.aval is None

    def get_known(self):
        return self.const if self.aval is None else None

    def get_aval(self):
        return get_aval(self.const) if self.aval is None else self.aval


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
    """Trace `fun` (a `linear_util.WrappedFun` of flat arguments) with `pvals`:
    → `(jaxpr, out_pvals, residuals)`. Outputs computable from the known inputs alone
    come back known (unless `instantiate`); `jaxpr` computes the others from the
    residuals followed by the unknown inputs."""
    pvals = list(pvals)
    unknown = [not pv.is_known() for pv in pvals]

    def flat(*xs):
        return list(fun.call_wrapped(*xs))
    closed = stage_flat(flat, [pv.get_aval() for pv in pvals])
    known, staged, out_unknowns, _ = partial_eval_jaxpr(closed, unknown, instantiate)
    outs = jaxpr_as_fun(known)(*(pv.const for pv in pvals if pv.is_known()))
    n_known = out_unknowns.count(False)
    known_outs, residuals = list(outs[:n_known]), list(outs[n_known:])
    staged_avals = iter(v.aval for v in staged.jaxpr.outvars)
    out_pvals = [PartialVal.unknown(next(staged_avals)) if u else
                 PartialVal.known(known_outs.pop(0)) for u in out_unknowns]
    return staged.jaxpr, out_pvals, residuals
