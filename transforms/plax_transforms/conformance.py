"""`check_primitive`: a primitive's rules checked against each other.

A primitive's rules are written separately (abstract evaluation, eager
implementation, jvp, transpose, batching, lowering) but must describe one
function. `check_primitive(prim, *example_args, **params)` applies the primitive to
the example and checks, wherever the primitive has the rules for it:

* `abstract_eval`: the eager implementation's outputs have the shapes, dtypes and
  weak types abstract evaluation predicts;
* `jit`: the lowering, under `plax.jit`, computes what eager evaluation computes;
* `jvp`, `jvp2`: forward mode agrees with central finite differences, to first
  and second order, along random directions in the floating operands;
* `vjp`: reverse mode agrees with finite differences (`<u, J v>` both ways);
* `transpose`: the transpose rule passes the dot-product test
  `<ct, L t> == <L^T ct, t>` for each set of operands the primitive is linear in
  (each floating operand alone and all of them together, where numerically
  linear; or `linear_argnums`);
* `batching`: `vmap` agrees with a loop over the batch, for every combination of
  operands batched or not, the batch dimension first or last (each operand batched
  with two examples: itself and its flip);
* `dtypes`: where the primitive declares the dtypes its operands accept
  (`Primitive.dtypes`, recorded by the constructors in `plax.extend.constructors`),
  abstract evaluation accepts each standard dtype among them and the lowering is
  well typed at each, and each standard dtype outside them is a `TypeError`.

All computed checks of one call are traced into one jitted function, so a call
costs a few compilations. Derivatives are checked at float32 or wider (narrower
floating examples are promoted). A primitive that uses named axes (it has an
`axis_names` rule: a collective) is checked inside `vmap`s binding those names.
A failed check raises an AssertionError naming the primitive, the check and the
inputs. The result lists the checks that ran.

The options are keywords; every other keyword is a parameter of the primitive:
`skip` (check names to leave out), `linear_argnums`, `nondiff_argnums` (floating
operands the primitive is not differentiable in: they are constants of the
differentiated function, so its jvp rule sees symbolic zero tangents for them, as
for integer operands), `jvp_order` (1 or 2), `atol`/`rtol` for the derivative
checks, and `observe`: a function of the primitive's outputs (a pytree of arrays,
written with other primitives) whose derivatives the derivative checks compare
instead of the outputs' own. It is for outputs that are defined only up to a gauge
(eigenvectors up to a phase): their derivative is checked on what the gauge leaves
invariant (e.g. projectors v vᴴ), since finite differences follow the kernel's
choice of gauge and a derivative rule another.
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable, Sequence

import numpy as np

import plax
from plax.extend import config, dtypes, tree_util
from plax.extend.ad import UndefinedPrimal, Zero, tangent_aval
from plax.extend.batching import extend_axis_env
from plax.extend.core import (AXIS_NAMES, BATCHING, JVP, LOWERING, TRANSPOSE, Primitive,
                              ShapedArray, get_aval)

CHECKS = ("abstract_eval", "jit", "jvp", "jvp2", "vjp", "transpose", "batching", "dtypes")

# The dtypes each dtype kind stands for in the `dtypes` check.
STANDARD_DTYPES = {
    "bool": (np.dtype(bool),),
    "signed": tuple(map(np.dtype, ("int8", "int16", "int32", "int64"))),
    "unsigned": tuple(map(np.dtype, ("uint8", "uint16", "uint32", "uint64"))),
    "float": (np.dtype("float16"), np.dtype(dtypes.bfloat16), np.dtype("float32"),
              np.dtype("float64")),
    "complex": (np.dtype("complex64"), np.dtype("complex128")),
}
_KIND_OF = {dt: kind for kind, dts in STANDARD_DTYPES.items() for dt in dts}
_X64_DTYPES = frozenset(map(np.dtype, ("int64", "uint64", "float64", "complex128")))

# Finite-difference step and tolerance of the derivative checks, by dtype.
_FD = {np.dtype("float32"): (1e-3, 1e-2), np.dtype("float64"): (1e-6, 1e-5),
       np.dtype("complex64"): (1e-3, 1e-2), np.dtype("complex128"): (1e-6, 1e-5)}
# Tolerance of comparisons of one computation done two ways (jit vs eager, vmap vs
# a loop): XLA may fuse and reassociate differently.
_CLOSE = {np.dtype("float16"): 4e-3, np.dtype(dtypes.bfloat16): 2e-2,
          np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-9,
          np.dtype("complex64"): 1e-5, np.dtype("complex128"): 1e-9}
_BATCH = 2


def check_primitive(prim: Primitive, *example_args, skip: Sequence[str] = (),
                    linear_argnums: Sequence[int] | None = None,
                    nondiff_argnums: Sequence[int] = (), jvp_order: int = 2,
                    atol: float | None = None, rtol: float | None = None,
                    observe: Callable | None = None, **params) -> list[str]:
    """Check `prim`'s rules against each other at `example_args` (see the module
    docstring); → the names of the checks that ran, with details
    (`"transpose[0, 1]"`, `"batching: 26 in_axes"`...)."""
    if not isinstance(prim, Primitive):
        raise TypeError(f"check_primitive: expected a Primitive, got {type(prim).__name__} "
                        f"{prim!r} (pass the primitive, e.g. lax.sin_p, not its function)")
    unknown = set(skip) - set(CHECKS)
    if unknown:
        raise ValueError(f"check_primitive: unknown checks {sorted(unknown)} in skip; the "
                         f"checks are {', '.join(CHECKS)}")
    if jvp_order not in (1, 2):
        raise ValueError(f"check_primitive: jvp_order must be 1 or 2, got {jvp_order!r}")
    return _Harness(prim, example_args, params, skip=set(skip), linear=linear_argnums,
                    nondiff=set(nondiff_argnums), jvp_order=jvp_order, atol=atol,
                    rtol=rtol, observe=observe).run()


class _Harness:
    def __init__(self, prim, args, params, *, skip, linear, nondiff, jvp_order, atol, rtol,
                 observe):
        self.prim, self.params, self.args = prim, params, tuple(args)
        self.observe = observe
        self.skip, self.linear, self.nondiff = skip, linear, nondiff
        self.jvp_order, self.atol, self.rtol = jvp_order, atol, rtol
        self.avals = [get_aval(a) for a in self.args]
        names = prim.get_rule(AXIS_NAMES)
        self.axis_names = tuple(names(**params)) if names else ()
        self.rng = np.random.default_rng(0)
        self.done: list[str] = []

    # --- naming and failing ---------------------------------------------------------
    def where(self) -> str:
        params = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return (f"{self.prim.id}({', '.join(_describe(a) for a in self.avals)}"
                f"{', ' if params and self.avals else ''}{params})")

    def fail(self, check: str, message: str):
        raise AssertionError(f"check_primitive {check} of {self.where()}: {message}")

    def has_rule(self, kind: str) -> bool:
        """Whether the primitive has a `kind` rule; for lowering, one for the platform
        the checks run on (a primitive may lower on some platforms only)."""
        platform = plax.default_backend() if kind == LOWERING else None
        return self.prim.get_rule(kind, platform) is not None

    def wanted(self, check: str, *rule_kinds: str) -> bool:
        return check not in self.skip and all(map(self.has_rule, rule_kinds))

    def apply(self, *xs):
        return self.prim.bind(*xs, **self.params)

    def binder(self, params) -> Callable:
        return lambda *xs: self.prim.bind(*xs, **params)

    def outs(self, out) -> list:
        return list(out) if self.prim.multiple_results else [out]

    def expected(self, avals, params=None) -> list[ShapedArray]:
        """The output types abstract evaluation predicts (in the named axes, whose
        sizes some collectives read there)."""
        with _bound(self.axis_names):
            return self.outs(self.prim.abstract_eval(*avals, **(params or self.params)))

    def in_named_axes(self, fn: Callable, inputs) -> tuple[Callable, Any]:
        """`fn` inside `vmap`s binding the primitive's axis names, if it uses any, and
        `inputs` for it (each stacked with its flip)."""
        for name in reversed(self.axis_names):
            fn = plax.vmap(fn, axis_name=name, axis_size=_BATCH)
            inputs = tree_util.tree_map(lambda x: np.stack([x, _flip(x)]), inputs)
        return fn, inputs

    def call(self, fn: Callable, inputs, *, jit: bool):
        fn, inputs = self.in_named_axes(fn, inputs)
        return (plax.jit(fn) if jit else fn)(inputs)

    # --- the checks -------------------------------------------------------------------
    def run(self) -> list[str]:
        eager = self.check_abstract_eval()
        plans = [p for p in (self.plan_jit(eager), self.plan_derivatives(),
                             self.plan_transpose(), self.plan_batching()) if p]
        if plans:
            # Verified against the inputs as fed: inside named axes, stacked per member.
            fn, fed = self.in_named_axes(lambda ins: [p.trace(i) for p, i in zip(plans, ins)],
                                         [p.inputs for p in plans])
            outs = plax.jit(fn)(fed)
            for plan, out, ins in zip(plans, outs, fed):
                plan.verify(out, ins)
                self.done += plan.names
        self.check_dtypes()
        return self.done

    def check_abstract_eval(self):
        if "abstract_eval" in self.skip:
            return None

        def eager(xs):
            out = self.apply(*xs)
            self.check_types("abstract_eval", "the eager implementation's",
                             [_type_of(o) for o in self.outs(out)],
                             self.expected([get_aval(x) for x in xs]))
            return out
        try:
            out = self.call(eager, self.args, jit=False)
        except AssertionError:
            raise
        except Exception as err:
            self.fail("abstract_eval", f"eager evaluation raised {type(err).__name__}: {err}")
        self.done.append("abstract_eval")
        return out

    def check_types(self, check, what, got, want):
        if len(got) != len(want):
            self.fail(check, f"{what} {len(got)} outputs, abstract_eval predicts {len(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            if (g.shape, _dtype(g.dtype), g.weak_type) != (w.shape, _dtype(w.dtype),
                                                           w.weak_type):
                self.fail(check, f"{what} output {i} is {_describe(g)}, but abstract_eval "
                                 f"predicts {_describe(w)}")

    def plan_jit(self, eager):
        if eager is None or not self.wanted("jit", LOWERING):
            return None

        def verify(out, _):
            self.compare("jit", "jit vs eager", self.outs(out), self.outs(eager), types=True)
        return _Plan(["jit"], self.args, lambda xs: self.apply(*xs), verify)

    def differentiable(self) -> list[int]:
        return [i for i, a in enumerate(self.avals)
                if _is_inexact(a.dtype) and i not in self.nondiff]

    def plan_derivatives(self):
        checks = [c for c in ("jvp", "vjp") if self.wanted(c, JVP)]
        diff = self.differentiable()
        if not checks or not diff:
            return None
        args = [_derivative_dtype(np.asarray(a, av.dtype)) if i in diff or i in self.nondiff
                else a for i, (a, av) in enumerate(zip(self.args, self.avals))]
        avals = [get_aval(a) for a in args]
        params = _retyped(self.params, self.avals[diff[0]].dtype, avals[diff[0]].dtype)
        apply = self.binder(params)
        eps, tol = _FD[np.dtype(avals[diff[0]].dtype)]
        atol, rtol = self.atol or tol, self.rtol or tol
        order2 = "jvp" in checks and self.jvp_order == 2 and "jvp2" not in self.skip
        out_avals = self.expected(avals, params)
        observe = self.observe or (lambda *outs: outs)

        def observed(outs) -> list:
            """The floating values the derivatives are checked on."""
            leaves = tree_util.tree_leaves(observe(*outs))
            return [o for o in leaves if _is_inexact(get_aval(o).dtype)]
        seen = tree_util.tree_leaves(plax.eval_shape(lambda *o: observed(list(o)), *out_avals))
        inputs = {"x": args, "v": self.random([avals[i] for i in diff]),
                  "v2": self.random([avals[i] for i in diff]) if order2 else [],
                  "u": self.random([ShapedArray(o.shape, o.dtype) for o in seen])}

        def moved(ds, vs, sign):
            return [d + sign * eps * t for d, t in zip(ds, vs)]

        def trace(ins):
            xs, v = ins["x"], tuple(ins["v"])

            # The primitive as a function of its differentiable operands alone: the
            # others are constants, so its jvp rule sees symbolic zero tangents there.
            def at(*ds):
                return self.outs(apply(*_replace(xs, diff, ds)))

            def checked(*ds):
                return observed(at(*ds))

            def first_order(*ds):
                return plax.jvp(checked, ds, v)[1]
            here = tuple(xs[i] for i in diff)
            res = {"plus": checked(*moved(here, v, 1)), "minus": checked(*moved(here, v, -1))}
            if "jvp" in checks:
                outs, tans = plax.jvp(at, here, v)
                want = [tangent_aval(get_aval(o)) for o in outs]
                self.check_types("jvp", "the jvp rule's tangent",
                                 [get_aval(t).strip_weak_type() for t in tans], want)
                res["t"] = first_order(*here) if self.observe else observed(tans)
            if order2:
                v2 = tuple(ins["v2"])
                res["t2"] = plax.jvp(first_order, here, v2)[1]
                res["plus2"] = first_order(*moved(here, v2, 1))
                res["minus2"] = first_order(*moved(here, v2, -1))
            if "vjp" in checks:
                _, pullback = plax.vjp(checked, *here)
                res["ct"] = list(pullback(list(ins["u"])))
            return res

        def verify(res, fed):
            fd = _central_difference(res["plus"], res["minus"], eps)
            if "jvp" in checks:
                self.close_to_fd("jvp", res["t"], fd, atol, rtol)
            if order2:
                self.close_to_fd("jvp2", res["t2"],
                                 _central_difference(res["plus2"], res["minus2"], eps),
                                 atol, rtol)
            if "vjp" in checks:
                self.dot_products("vjp", ("<u, J v> by finite differences", "<vjp(u), v>"),
                                  (fed["u"], fd), (res["ct"], fed["v"]), atol, rtol)
        names = [*(["jvp"] if "jvp" in checks else []), *(["jvp2"] if order2 else []),
                 *(["vjp"] if "vjp" in checks else [])]
        return _Plan(names, inputs, trace, verify)

    def close_to_fd(self, check, got, fd, atol, rtol):
        for i, (g, f) in enumerate(zip(got, fd, strict=True)):
            g = np.asarray(g).astype(f.dtype)
            if not np.allclose(g, f, atol=atol, rtol=rtol):
                self.fail(check, f"output {i} differs from central finite differences "
                                 f"(max error {np.max(np.abs(g - f)):.3g}, atol={atol}, "
                                 f"rtol={rtol}):\n rule gives  {g}\n differences {f}")

    def dot_products(self, check, names, left, right, atol, rtol):
        """The dot-product test: the pairings of `left` and of `right` agree."""
        lhs, lscale = _pairing(*left)
        rhs, rscale = _pairing(*right)
        if abs(lhs - rhs) > atol + rtol * max(lscale, rscale):
            self.fail(check, f"the dot-product test fails: {names[0]} = {lhs:.6g} but "
                             f"{names[1]} = {rhs:.6g}")

    # --- transpose --------------------------------------------------------------------
    def linear_sets(self) -> list[tuple[int, ...]]:
        """The operand sets to transpose with respect to: explicit, or those the
        primitive is numerically linear in (each floating operand, and all). An
        example whose output does not depend on an operand (degenerate windows) is
        linear in it too, which the rule need not handle: declare `linear_argnums`."""
        floating = [i for i, a in enumerate(self.avals) if _is_inexact(a.dtype)]
        declared = self.linear is not None
        candidates = list(self.linear) if declared else floating
        sets = [(i,) for i in candidates] + ([tuple(candidates)] if len(candidates) > 1 else [])
        if all(0 in a.shape for a in self.expected(self.avals)):
            # Every function to an empty output is linear: only declared sets count.
            return sets if declared else []
        found = [s for s in sets if self.is_linear(s)]
        if declared and tuple(candidates) not in found and not all((i,) in found
                                                                     for i in candidates):
            self.fail("transpose", f"linear_argnums={tuple(candidates)}, but the primitive "
                                   "is not linear in those operands")
        return found

    def is_linear(self, argnums) -> bool:
        a, b = 0.75, -1.25
        t1 = self.random([self.avals[i] for i in argnums])
        t2 = self.random([self.avals[i] for i in argnums])
        mix = [a * x + b * y for x, y in zip(t1, t2)]

        def probe(ins):
            return [self.outs(self.apply(*_replace(ins["x"], argnums, t)))
                    for t in (ins["t1"], ins["t2"], ins["mix"])]
        o1, o2, o3 = self.call(probe, {"x": self.args, "t1": t1, "t2": t2, "mix": mix},
                               jit=False)
        for y1, y2, y3 in zip(o1, o2, o3):
            dtype = np.dtype(get_aval(y3).dtype)
            if not _is_inexact(dtype):
                return False
            y1, y2, y3 = (np.asarray(y, np.complex128) for y in (y1, y2, y3))
            tol = 10 * _CLOSE.get(dtype, 1e-5)
            scale = 1 + np.abs(y3).max(initial=0)
            if not np.allclose(y3, a * y1 + b * y2, rtol=tol, atol=tol * scale):
                return False
        return True

    def plan_transpose(self):
        if not self.wanted("transpose", TRANSPOSE):
            return None
        sets = self.linear_sets()
        if not sets:
            return None
        out_avals = self.expected(self.avals)
        inputs = [{"x": self.args, "t": self.random([self.avals[i] for i in s]),
                   "ct": self.random(out_avals)} for s in sets]
        rule = self.prim.get_rule(TRANSPOSE)

        def trace(ins):
            results = []
            for s, case in zip(sets, ins):
                xs = case["x"]
                lin = self.outs(self.apply(*_replace(xs, s, case["t"])))
                operands = [UndefinedPrimal(get_aval(x).strip_weak_type()) if i in s else x
                            for i, x in enumerate(xs)]
                ct = case["ct"] if self.prim.multiple_results else case["ct"][0]
                try:
                    cts = rule(ct, *operands, **self.params)
                except Exception as err:
                    self.fail("transpose", f"with operands {list(s)} linear, the transpose "
                                           f"rule raised {type(err).__name__}: {err}")
                if len(cts) != len(xs):
                    self.fail("transpose", f"the rule returned {len(cts)} cotangents for "
                                           f"{len(xs)} operands")
                cts = [_instantiate(cts[i], get_aval(xs[i]).strip_weak_type()) for i in s]
                self.check_types("transpose", f"with operands {list(s)} linear, the rule's "
                                 "cotangent", [get_aval(c).strip_weak_type() for c in cts],
                                 [get_aval(xs[i]).strip_weak_type() for i in s])
                results.append((lin, cts))
            return results

        def verify(results, fed):
            for s, case, (lin, cts) in zip(sets, fed, results):
                tol = min(100 * _CLOSE.get(np.dtype(self.avals[s[0]].dtype), 1e-4), 1e-2)
                self.dot_products(f"transpose[{', '.join(map(str, s))}]",
                                  ("<ct, L t>", "<L^T ct, t>"), (case["ct"], lin),
                                  (cts, case["t"]), tol, tol)
        return _Plan([f"transpose[{', '.join(map(str, s))}]" for s in sets], inputs, trace,
                     verify)

    # --- batching ---------------------------------------------------------------------
    def in_axes_combinations(self) -> list[tuple]:
        """Each operand unbatched, batched at 0 or batched last (rank 0: just 0);
        not all unbatched."""
        choices = [(None, 0) if a.ndim == 0 else (None, 0, a.ndim) for a in self.avals]
        return [c for c in itertools.product(*choices) if any(d is not None for d in c)]

    def plan_batching(self):
        if not self.wanted("batching", BATCHING) or not self.args:
            return None
        combos = self.in_axes_combinations()
        jnp = plax.numpy

        def subset(combo) -> tuple[bool, ...]:
            return tuple(d is not None for d in combo)

        def trace(xs):
            flipped = [jnp.flip(x) for x in xs]
            stacked = [jnp.stack([x, f]) for x, f in zip(xs, flipped)]
            mapped = []
            for combo in combos:
                batched = [x if d is None else jnp.moveaxis(s, 0, d)
                           for x, s, d in zip(xs, stacked, combo)]
                try:
                    out = self.outs(plax.vmap(self.apply, in_axes=combo)(*batched))
                except Exception as err:
                    self.fail("batching", f"with in_axes={combo}, vmap raised "
                                          f"{type(err).__name__}: {err}")
                # a stacked operand is no longer weakly typed
                want = self.expected([get_aval(x) if d is None else
                                      get_aval(x).strip_weak_type() for x, d in zip(xs, combo)])
                self.check_types("batching", f"with in_axes={combo}, the batched",
                                 [get_aval(o) for o in out],
                                 [a.update(shape=(_BATCH, *a.shape)) for a in want])
                mapped.append(out)
            # The loop: the first member of every batch is the example itself; the
            # second has the flipped operands where they are batched.
            second = {sub: self.outs(self.apply(*(f if b else x for x, f, b
                                                  in zip(xs, flipped, sub))))
                      for sub in dict.fromkeys(map(subset, combos))}
            return mapped, self.outs(self.apply(*xs)), second

        def verify(res, _):
            mapped, first, second = res
            for combo, got in zip(combos, mapped):
                want = [np.stack([_host(a), _host(b)], axis=len(self.axis_names))  # named axes 1st
                        for a, b in zip(first, second[subset(combo)])]
                self.compare("batching", f"with in_axes={combo}, vmap vs a loop", got, want)
        return _Plan([f"batching: {len(combos)} in_axes"], self.args, trace, verify)

    def compare(self, check, what, got, want, types=False):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if types:
                self.check_types(check, f"{what}: the jitted", [get_aval(g)], [get_aval(w)])
            g, w = _host(g), _host(w)
            tol = _CLOSE.get(np.dtype(w.dtype), 0)
            if g.shape != w.shape or not np.allclose(_wide(g), _wide(w), rtol=tol, atol=tol,
                                                     equal_nan=True):
                self.fail(check, f"{what}, output {i} differs:\n got  {g}\n want {w}")

    # --- dtypes -----------------------------------------------------------------------
    def check_dtypes(self):
        kinds = getattr(self.prim, "dtypes", None)
        if kinds is None or "dtypes" in self.skip or not self.args:
            return
        main = np.dtype(self.avals[0].dtype)
        which = [i for i, a in enumerate(self.avals) if np.dtype(a.dtype) == main]
        accepted, rejected = [], []
        for dt in (d for dts in STANDARD_DTYPES.values() for d in dts):
            (accepted if _KIND_OF[dt] in kinds or dt.name in kinds else rejected).append(dt)
        if main in _KIND_OF and main not in accepted:
            self.fail("dtypes", f"the example's dtype {main.name} is accepted, but the "
                                f"primitive declares dtypes {sorted(kinds)}")
        for wide in (False, True):
            group = [d for d in accepted if (d in _X64_DTYPES) == wide]
            with plax.enable_x64(wide or config.enable_x64.value):
                self.check_accepted(group, which)
                for dt in (d for d in rejected if (d in _X64_DTYPES) == wide):
                    self.check_rejected(dt, which)
        self.done.append(f"dtypes: {len(accepted)} accepted, {len(rejected)} rejected")

    def converted(self, dt, which):
        return [_convert(a, dt) if i in which else a for i, a in enumerate(self.args)]

    def check_accepted(self, group, which):
        """Abstract eval accepts each dtype of `group`, and the lowering is well typed
        (the lowering checks each rule's results against abstract eval, and verifies
        the module); compiling and running is left to the example's dtype."""
        main = self.avals[which[0]].dtype
        cases = [(dt, self.converted(dt, which), _retyped(self.params, main, dt))
                 for dt in group]
        for dt, xs, params in cases:
            try:
                with _bound(self.axis_names):
                    self.expected([get_aval(x) for x in xs], params)
            except Exception as err:
                self.fail("dtypes", f"abstract_eval rejects the declared dtype {dt.name}: "
                                    f"{type(err).__name__}: {err}")
        if not cases or not self.has_rule(LOWERING):
            return
        try:
            self.lower(cases)
        except Exception:
            for case in cases:  # which dtype?
                try:
                    self.lower([case])
                except Exception as err:
                    self.fail("dtypes", f"lowering at dtype {case[0].name} raised "
                                        f"{type(err).__name__}: {err}")
            raise

    def lower(self, cases):
        def fn(ins):
            return [self.binder(params)(*xs) for (_, _, params), xs in zip(cases, ins)]
        fn, inputs = self.in_named_axes(fn, [xs for _, xs, _ in cases])
        plax.jit(fn).lower(inputs)

    def check_rejected(self, dt, which):
        xs = self.converted(dt, which)
        try:
            with _bound(self.axis_names):
                self.expected([get_aval(x) for x in xs],
                              _retyped(self.params, self.avals[which[0]].dtype, dt))
        except TypeError:
            return
        self.fail("dtypes", f"abstract_eval accepts dtype {dt.name}, which the primitive "
                            f"does not declare (it declares {sorted(self.prim.dtypes)})")

    def random(self, avals) -> list[np.ndarray]:
        return [_random(self.rng, a) for a in avals]


class _Plan:
    """One check's part of the jitted function: its inputs, what to trace, and how
    to judge the results."""

    def __init__(self, names, inputs, trace, verify):
        # `verify(result, inputs as fed)`: inside named axes they are stacked per member.
        self.names, self.inputs, self.trace, self.verify = names, inputs, trace, verify


# --- values -------------------------------------------------------------------------------

def _type_of(x) -> ShapedArray:
    """The type of a value as it is: NumPy values are not canonicalized (an impl rule
    returning float64 under x64-off is a mismatch, not float32)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray(x.shape, x.dtype)
    return get_aval(x)


def _dtype(dtype):
    """`dtype` as a NumPy dtype; extended dtypes (PRNG keys) as they are."""
    return dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)


def _host(x) -> np.ndarray:
    """A value as NumPy; an array of an extended dtype (PRNG keys) as its data."""
    if isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType):
        return np.asarray(x._value)
    return np.asarray(x)


def _is_inexact(dtype) -> bool:
    dt = _dtype(dtype)
    return dt != dtypes.float0 and dtypes.issubdtype(dt, np.inexact)


def _derivative_dtype(x: np.ndarray) -> np.ndarray:
    """Derivatives are checked at float32 or wider."""
    if _is_inexact(x.dtype) and np.dtype(x.dtype) not in _FD:
        return x.astype(np.complex64 if np.iscomplexobj(x) else np.float32)
    return x


def _retyped(params: dict, old, new) -> dict:
    """`params` for operands of dtype `new` instead of `old`: parameters that name
    the operands' dtype (`conj`'s `input_dtype`) follow it."""
    old, new = np.dtype(old), np.dtype(new)
    return {k: new if isinstance(v, np.dtype) and v == old else v for k, v in params.items()}


def _random(rng, aval: ShapedArray) -> np.ndarray:
    dt = np.dtype(aval.dtype)
    x = rng.standard_normal(aval.shape)
    if _is_inexact(dt) and dtypes.issubdtype(dt, np.complexfloating):
        x = x + 1j * rng.standard_normal(aval.shape)
    return np.asarray(x).astype(dt)


def _zero_tangent(aval: ShapedArray):
    return np.zeros(aval.shape, tangent_aval(aval).dtype)


def _instantiate(ct, aval: ShapedArray):
    if ct is None or isinstance(ct, Zero):
        return np.zeros(aval.shape, aval.dtype)
    return ct


def _replace(xs, argnums, values):
    values = dict(zip(argnums, values))
    return [values.get(i, x) for i, x in enumerate(xs)]


def _flip(x):
    return np.flip(np.asarray(x))


def _wide(x: np.ndarray) -> np.ndarray:
    if _is_inexact(x.dtype):
        return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    return x


def _central_difference(plus, minus, eps) -> list[np.ndarray]:
    return [(_wide(np.asarray(p)) - _wide(np.asarray(m))) / (2 * eps)
            for p, m in zip(plus, minus, strict=True)]


def _pairing(xs, ys) -> tuple[float, float]:
    """The real bilinear pairing `Re sum(x * y)` (under which transpose rules
    transpose, complex ones included) and the sum of the products' magnitudes."""
    total = scale = 0.0
    for x, y in zip(xs, ys, strict=True):
        prod = _wide(np.asarray(x)) * _wide(np.asarray(y))
        total += float(np.real(prod.sum()))
        scale += float(np.abs(prod).sum())
    return total, scale


def _convert(x, dt: np.dtype) -> np.ndarray:
    """The example value `x` in dtype `dt`: rounded for integers (0 for non-finite
    values), non-negative for unsigned integers, nonzero-ness for bool."""
    x = np.asarray(x)
    if dt == np.dtype(bool):
        return x != 0
    if _KIND_OF.get(dt) in ("signed", "unsigned"):
        x = np.round(np.nan_to_num(np.real(x).astype(np.float64), nan=0, posinf=0, neginf=0))
        x = np.abs(x) if _KIND_OF[dt] == "unsigned" else x
        return np.clip(x, np.iinfo(dt).min, np.iinfo(dt).max).astype(dt)
    return (x if _KIND_OF.get(dt) == "complex" else np.real(x)).astype(dt)


def _bound(names) -> contextlib.ExitStack:
    """The axis environment binding `names` as `check_primitive`'s vmaps do."""
    stack = contextlib.ExitStack()
    for name in names:
        stack.enter_context(extend_axis_env(name, _BATCH))
    return stack


def _describe(aval) -> str:
    return aval.str_short() + ("{weak}" if getattr(aval, "weak_type", False) else "")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
