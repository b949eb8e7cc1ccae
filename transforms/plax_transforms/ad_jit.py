"""Differentiation rules of `jit_p`, so that `grad(jit(f))` keeps `f` staged as its
own calls instead of inlining it:

* jvp: one `jit` call of the jvp of the inner Jaxpr (`ad.jvp_jaxpr`);
* partial evaluation: the inner Jaxpr split by `partial_eval_jaxpr` into a known
  call (run now, returning residuals) and an unknown call (recorded);
* transpose: one `jit` call of the transposed inner Jaxpr.
"""
from __future__ import annotations

from plax._src.ad_util import Zero, instantiate, is_undefined_primal, tangent_aval
from plax._src.ir import ClosedJaxpr, JaxprEqn, Var
from plax._src.primitive import JVP, PARTIAL_EVAL, TRANSPOSE

from plax_transforms.ad import jvp_jaxpr
from plax_transforms.jit_primitive import jit_p, jit_params
from plax_transforms.partial_eval import PARTIAL_EVAL_JAXPR, partial_eval_jaxpr
from plax_transforms.transpose import transpose_jaxpr


def _call(closed: ClosedJaxpr, name: str, args):
    return jit_p.bind(*args, **jit_params(closed, name))


def _jit_jvp(primals, tangents, *, jaxpr: ClosedJaxpr, name: str, **_):
    nonzeros = [not isinstance(t, Zero) for t in tangents]
    jvp_closed, out_nonzeros = jvp_jaxpr(jaxpr, nonzeros)
    outs = _call(jvp_closed, f"jvp({name})",
                 [*primals, *(t for t, nz in zip(tangents, nonzeros) if nz)])
    n = len(jaxpr.out_avals)
    nz_tangents = iter(outs[n:])
    return outs[:n], [next(nz_tangents) if nz else Zero(tangent_aval(a))
                      for nz, a in zip(out_nonzeros, jaxpr.out_avals)]


def _jit_partial_eval(trace, args, *, jaxpr: ClosedJaxpr, name: str, **_):
    unknowns = [trace.is_unknown(a) for a in args]
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns)
    known_outs = trace.bind_known(jit_p, [a for a, u in zip(args, unknowns) if not u],
                                  jit_params(known, name))
    n_known = len(known_outs) - num_res
    residuals = known_outs[n_known:]
    unknown_outs = iter(trace.stage(jit_p, [*residuals, *(a for a, u in zip(args, unknowns)
                                                           if u)],
                                    jit_params(unknown, name)))
    known_iter = iter(known_outs[:n_known])
    return [next(unknown_outs) if u else next(known_iter) for u in out_unknowns]


def _jit_partial_eval_jaxpr(eqn: JaxprEqn, unknowns):
    params = eqn.params
    known, unknown, out_unknowns, num_res = partial_eval_jaxpr(params["jaxpr"], unknowns)
    residuals = [Var(a) for a in unknown.in_avals[:num_res]]
    known_eqn = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, unknowns) if not u],
        outvars=[v for v, u in zip(eqn.outvars, out_unknowns) if not u] + residuals,
        params=jit_params(known, params["name"]))
    unknown_eqn = eqn.replace(
        invars=residuals + [a for a, u in zip(eqn.invars, unknowns) if u],
        outvars=[v for v, u in zip(eqn.outvars, out_unknowns) if u],
        params=jit_params(unknown, params["name"]))
    return known_eqn, unknown_eqn, out_unknowns, residuals


def _jit_transpose(cts, *args, jaxpr: ClosedJaxpr, name: str, **_):
    linear = [is_undefined_primal(a) for a in args]
    transposed = transpose_jaxpr(jaxpr, linear)
    outs = iter(_call(transposed, f"transpose({name})",
                      [*(a for a, lin in zip(args, linear) if not lin),
                       *(instantiate(ct) for ct in cts)]))
    return [next(outs) if lin else None for lin in linear]


jit_p.define_rule(JVP, _jit_jvp)
jit_p.define_rule(PARTIAL_EVAL, _jit_partial_eval)
jit_p.define_rule(PARTIAL_EVAL_JAXPR, _jit_partial_eval_jaxpr)
jit_p.define_rule(TRANSPOSE, _jit_transpose)
