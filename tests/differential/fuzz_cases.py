"""Hypothesis strategies for differential cases: valid and invalid calls over the
NumPy API, `lax` and the transformations, in 15 families.

A case is JSON (see `fuzz_worker.py` for the encoding): the family, the op, its
arguments, and the mode (`eager` or `jit`). Shapes are small, so a case costs a
compile of a few operations. Invalid calls are generated on purpose —
incompatible shapes, out-of-bounds axes and indices, wrong dtypes, Python scalars
that do not fit, bad transformation options — because their exception classes
are part of the API.
"""
from __future__ import annotations

import json
import math

import hypothesis
from hypothesis import strategies as st

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "uint32", "float16", "bfloat16",
          "float32", "complex64"]
NUMERIC = [d for d in DTYPES if d != "bool"]
FLOATS = ["float16", "bfloat16", "float32"]
INTS = ["int8", "uint8", "int16", "int32", "uint32"]

PY_SCALARS = [0, 1, -1, 2, 3, 200, -129, 255, 256, 2**31, 2**40, -2**63, 2**64, 0.5,
              -2.5, 1e40, math.inf, -math.inf, math.nan, True, False, {"C": [1.0, 2.5]}]


def tup(*items):
    return {"T": list(items)}


@st.composite
def shapes(draw, min_dims=0, max_dims=3, max_side=4):
    return draw(st.lists(st.integers(0 if draw(st.booleans()) else 1, max_side),
                         min_size=min_dims, max_size=max_dims))


def array(shape, dtype, fill="normal", seed=0, host=False):
    return {"N" if host else "A": [list(shape), dtype, fill, seed]}


@st.composite
def arrays(draw, dtypes=DTYPES, shape=None, fills=("normal", "normal", "pos", "special",
                                                    "zeros")):
    shape = draw(shapes()) if shape is None else shape
    return array(shape, draw(st.sampled_from(dtypes)), draw(st.sampled_from(fills)),
                 draw(st.integers(0, 1000)), host=draw(st.integers(0, 9)) == 0)


@st.composite
def broadcastable_shapes(draw):
    """Two shapes that broadcast, usually; incompatible now and then."""
    base = draw(shapes(min_dims=0, max_dims=3, max_side=3))
    other = [d if draw(st.integers(0, 3)) else 1 for d in base]
    other = other[draw(st.integers(0, len(other))):]
    if draw(st.integers(0, 7)) == 0 and base:
        other = [d + 1 for d in base]  # incompatible
    return (base, other) if draw(st.booleans()) else (other, base)


def operand(draw, shape, dtypes=DTYPES):
    """An array of `shape`, or now and then a Python scalar instead."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(PY_SCALARS))
    return draw(arrays(dtypes=dtypes, shape=shape))


def axis_for(draw, ndim: int, allow_none=True, allow_tuple=True):
    choices = [st.integers(-ndim - 1, ndim)]
    if allow_none:
        choices.append(st.none())
    if allow_tuple and ndim:
        choices.append(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim)
                       .map(lambda axes: tup(*axes)))
    return draw(st.one_of(*choices))


def case(family, op, args=(), kwargs=None, mode="eager"):
    return {"family": family, "op": op, "args": list(args), "kwargs": kwargs or {},
            "mode": mode}


MODES = st.sampled_from(["eager", "jit"])

# --- families --------------------------------------------------------------------------

UNARY = ["negative", "abs", "sin", "cos", "tanh", "exp", "log", "log1p", "sqrt", "rsqrt",
         "floor", "ceil", "round", "trunc", "sign", "isnan", "isinf", "isfinite",
         "logical_not", "bitwise_not", "invert", "reciprocal", "square", "exp2", "expm1",
         "arcsin", "arctan", "sinh", "cbrt", "signbit", "positive", "conj", "real", "imag",
         "angle", "deg2rad", "fabs", "rint", "iscomplex", "isreal"]
BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
          "mod", "fmod", "power", "maximum", "minimum", "equal", "not_equal", "less",
          "greater_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
          "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "arctan2", "hypot",
          "copysign", "nextafter", "heaviside", "float_power", "logaddexp", "fmax", "fmin",
          "gcd", "lcm", "divmod", "ldexp", "isclose"]
OPERATORS = ["op:+", "op:-", "op:*", "op:/", "op://", "op:%", "op:**", "op:==", "op:!=",
             "op:<", "op:>=", "op:&", "op:|", "op:^", "op:<<", "op:>>"]
LAX_UNARY = ["lax.neg", "lax.sin", "lax.exp", "lax.abs", "lax.sign", "lax.floor",
             "lax.sqrt", "lax.logistic", "lax.bitwise_not", "lax.population_count",
             "lax.is_finite",
             "lax.real", "lax.imag", "lax.clz"]
LAX_BINARY = ["lax.add", "lax.sub", "lax.mul", "lax.div", "lax.rem", "lax.max", "lax.min",
              "lax.pow", "lax.atan2", "lax.eq", "lax.lt", "lax.bitwise_and", "lax.bitwise_or",
              "lax.shift_left", "lax.shift_right_logical", "lax.nextafter", "lax.complex"]


@st.composite
def elementwise(draw):
    mode = draw(MODES)
    kind = draw(st.sampled_from(["unary", "binary", "operator", "lax_unary", "lax_binary"]))
    if kind in ("unary", "lax_unary"):
        op = draw(st.sampled_from(UNARY)) if kind == "unary" else draw(st.sampled_from(LAX_UNARY))
        op = "jnp." + op if kind == "unary" else op
        return case("elementwise", op, [operand(draw, draw(shapes()))], mode=mode)
    a_shape, b_shape = draw(broadcastable_shapes())
    if kind == "lax_binary":
        dtype = draw(st.sampled_from(DTYPES))
        other = dtype if draw(st.integers(0, 4)) else draw(st.sampled_from(DTYPES))
        args = [draw(arrays(dtypes=[dtype], shape=a_shape)),
                draw(arrays(dtypes=[other], shape=a_shape if draw(st.integers(0, 4))
                            else b_shape))]
        if draw(st.integers(0, 5)) == 0:
            args[1] = draw(st.sampled_from(PY_SCALARS))
        return case("elementwise", draw(st.sampled_from(LAX_BINARY)), args, mode=mode)
    op = ("jnp." + draw(st.sampled_from(BINARY)) if kind == "binary"
          else draw(st.sampled_from(OPERATORS)))
    args = [operand(draw, a_shape), operand(draw, b_shape)]
    if isinstance(args[0], (int, float, dict)) and isinstance(args[1], (int, float, dict)) \
            and not (isinstance(args[0], dict) and "A" in args[0]):
        args[0] = draw(arrays(shape=a_shape))
    return case("elementwise", op, args, mode=mode)


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "all",
              "any", "cumsum", "cumprod", "nansum", "nanmax", "count_nonzero", "ptp",
              "median", "average", "nanmean", "cumulative_sum", "logsumexp"]


@st.composite
def reductions(draw):
    mode = draw(MODES)
    x = draw(arrays(dtypes=DTYPES))
    ndim = len(x[next(iter(x))][0])
    if draw(st.integers(0, 3)) == 0:
        op = draw(st.sampled_from(["lax.reduce_sum", "lax.reduce_max", "lax.reduce_min",
                                   "lax.reduce_prod", "lax.argmax", "lax.cumsum"]))
        if op == "lax.argmax":
            return case("reductions", op, [x, draw(st.integers(-1, ndim)), {"D": "int32"}],
                        mode=mode)
        if op == "lax.cumsum":
            return case("reductions", op, [x], {"axis": draw(st.integers(-ndim - 1, ndim))},
                        mode=mode)
        axes = draw(st.lists(st.integers(-1, ndim), max_size=ndim + 1))
        return case("reductions", op, [x, tup(*axes)], mode=mode)
    name = draw(st.sampled_from(REDUCTIONS))
    op = "jax.nn.logsumexp" if name == "logsumexp" else "jnp." + name
    kwargs = {}
    if name in ("cumsum", "cumprod", "argmax", "argmin", "cumulative_sum"):
        axis = draw(st.one_of(st.none(), st.integers(-ndim - 1, ndim)))
        if axis is not None or name == "cumulative_sum":
            kwargs["axis"] = axis
    else:
        kwargs["axis"] = axis_for(draw, ndim)
    if name not in ("argmax", "argmin", "cumsum", "cumprod", "median", "cumulative_sum",
                    "average") and draw(st.booleans()):
        kwargs["keepdims"] = True
    if name in ("sum", "prod", "mean", "cumsum", "cumprod") and draw(st.integers(0, 3)) == 0:
        kwargs["dtype"] = {"D": draw(st.sampled_from(DTYPES))}
    if name in ("var", "std") and draw(st.booleans()):
        kwargs["ddof"] = draw(st.integers(0, 3))
    if name in ("sum", "max", "min") and draw(st.integers(0, 4)) == 0:
        # Values every dtype holds: converting -1.5 to an unsigned type is undefined.
        kwargs["initial"] = draw(st.sampled_from([0, 1, 2.5, -1]))
    return case("reductions", op, [x], kwargs, mode=mode)


@st.composite
def shape_ops(draw):
    mode = draw(MODES)
    shape = draw(shapes(min_dims=0, max_dims=3))
    x = draw(arrays(shape=shape))
    ndim = len(shape)
    size = math.prod(shape)
    which = draw(st.sampled_from(["reshape", "transpose", "squeeze", "expand_dims", "swapaxes",
                                  "moveaxis", "broadcast_to", "ravel", "flip", "tile", "repeat",
                                  "rot90", "lax.reshape", "lax.transpose", "lax.squeeze",
                                  "lax.expand_dims", "lax.broadcast_in_dim", "lax.rev",
                                  "atleast_2d", "roll", "method:reshape"]))
    if which in ("reshape", "lax.reshape", "method:reshape"):
        new = draw(st.one_of(
            st.just([size]), st.just([-1]), st.just([size, 1]), st.just([-1, 2]),
            st.lists(st.integers(-1, 4), max_size=3)))
        if which == "method:reshape":
            return case("shape ops", which, [x, *new], mode=mode)
        return case("shape ops", "jnp.reshape" if which == "reshape" else which,
                    [x, tup(*new)], mode=mode)
    if which in ("transpose", "lax.transpose"):
        perm = draw(st.one_of(st.permutations(list(range(ndim))),
                              st.lists(st.integers(-ndim - 1, ndim), max_size=ndim + 1)))
        if which == "transpose" and draw(st.integers(0, 4)) == 0:
            return case("shape ops", "jnp.transpose", [x], mode=mode)
        return case("shape ops", "jnp." + which if which == "transpose" else which,
                    [x, tup(*perm)], mode=mode)
    if which in ("squeeze", "lax.squeeze"):
        axes = draw(st.lists(st.integers(-ndim - 1, ndim), max_size=2))
        if which == "squeeze":
            return case("shape ops", "jnp.squeeze", [x],
                        {"axis": tup(*axes) if axes else None}, mode=mode)
        return case("shape ops", which, [x, tup(*axes)], mode=mode)
    if which in ("expand_dims", "lax.expand_dims"):
        axes = draw(st.lists(st.integers(-ndim - 2, ndim + 1), min_size=1, max_size=2))
        if which == "expand_dims":
            return case("shape ops", "jnp.expand_dims", [x, tup(*axes) if len(axes) > 1
                                                         else axes[0]], mode=mode)
        return case("shape ops", which, [x, tup(*axes)], mode=mode)
    if which in ("swapaxes", "moveaxis"):
        a, b = draw(st.integers(-ndim - 1, ndim)), draw(st.integers(-ndim - 1, ndim))
        return case("shape ops", "jnp." + which, [x, a, b], mode=mode)
    if which == "broadcast_to":
        target = draw(st.one_of(st.just([2, *shape]), st.just(shape),
                                st.lists(st.integers(0, 4), max_size=3)))
        return case("shape ops", "jnp.broadcast_to", [x, tup(*target)], mode=mode)
    if which == "lax.broadcast_in_dim":
        target = [2, *shape] if draw(st.booleans()) else draw(st.lists(st.integers(1, 3),
                                                                       max_size=3))
        dims = draw(st.one_of(st.just(list(range(len(target) - ndim, len(target)))),
                              st.lists(st.integers(-1, 3), max_size=ndim + 1)))
        return case("shape ops", which, [x, tup(*target), tup(*dims)], mode=mode)
    if which == "lax.rev":
        dims = draw(st.lists(st.integers(-1, ndim), max_size=ndim + 1))
        return case("shape ops", which, [x, tup(*dims)], mode=mode)
    if which in ("flip", "roll"):
        kwargs = {"axis": axis_for(draw, ndim)}
        args = [x, draw(st.integers(-3, 3))] if which == "roll" else [x]
        return case("shape ops", "jnp." + which, args, kwargs, mode=mode)
    if which == "tile":
        reps = draw(st.lists(st.integers(-1, 3), max_size=3))
        return case("shape ops", "jnp.tile", [x, tup(*reps)], mode=mode)
    if which == "repeat":
        return case("shape ops", "jnp.repeat", [x, draw(st.integers(-1, 3))],
                    {"axis": draw(st.one_of(st.none(), st.integers(-ndim - 1, ndim)))},
                    mode=mode)
    if which == "rot90":
        return case("shape ops", "jnp.rot90", [x, draw(st.integers(-2, 5))], mode=mode)
    return case("shape ops", "jnp." + which, [x], mode=mode)


@st.composite
def concatenation(draw):
    mode = draw(MODES)
    base = draw(shapes(min_dims=0, max_dims=3, max_side=3))
    n = draw(st.integers(0, 3))
    parts = []
    for _ in range(n):
        shape = list(base)
        if shape and draw(st.integers(0, 3)):
            shape[draw(st.integers(0, len(shape) - 1))] = draw(st.integers(0, 3))
        parts.append(draw(arrays(shape=shape)))
    which = draw(st.sampled_from(["concatenate", "stack", "hstack", "vstack", "column_stack",
                                  "split", "array_split", "lax.concatenate", "dstack",
                                  "append"]))
    ndim = len(base)
    if which in ("split", "array_split"):
        x = parts[0] if parts else draw(arrays(shape=base))
        sections = draw(st.one_of(st.integers(-1, 4), st.lists(st.integers(-1, 4), max_size=3)
                                  .map(lambda s: tup(*s))))
        return case("concatenation", "jnp." + which, [x, sections],
                    {"axis": draw(st.integers(-ndim - 1, ndim))}, mode=mode)
    if which == "lax.concatenate":
        return case("concatenation", which, [parts, draw(st.integers(-1, ndim))], mode=mode)
    if which == "append":
        x = parts[0] if parts else draw(arrays(shape=base))
        y = parts[-1] if parts else draw(arrays(shape=base))
        return case("concatenation", "jnp.append", [x, y],
                    {"axis": draw(st.one_of(st.none(), st.integers(-ndim - 1, ndim)))},
                    mode=mode)
    kwargs = {}
    if which in ("concatenate", "stack"):
        kwargs["axis"] = draw(st.one_of(st.none(), st.integers(-ndim - 2, ndim + 1)))
        if kwargs["axis"] is None and which == "stack":
            del kwargs["axis"]
    seq = parts if draw(st.integers(0, 3)) else tup(*parts)
    return case("concatenation", "jnp." + which, [seq], kwargs, mode=mode)


@st.composite
def products(draw):
    mode = draw(MODES)
    m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
    dtype = draw(st.sampled_from(NUMERIC + ["bool"]))
    other = dtype if draw(st.integers(0, 3)) else draw(st.sampled_from(NUMERIC))
    k2 = k if draw(st.integers(0, 4)) else k + 1
    a_shape = draw(st.sampled_from([[m, k], [k], [2, m, k], []]))
    b_shape = draw(st.sampled_from([[k2, n], [k2], [2, k2, n], []]))
    a, b = array(a_shape, dtype, seed=1), array(b_shape, other, seed=2)
    which = draw(st.sampled_from(["matmul", "dot", "vdot", "inner", "outer", "tensordot",
                                  "einsum", "lax.dot_general", "lax.dot", "op:@", "kron",
                                  "lax.batch_matmul"]))
    if which == "tensordot":
        axes = draw(st.one_of(st.integers(-1, 3), st.just(tup([len(a_shape) - 1], [0]))
                              .map(lambda t: {"T": [{"T": t["T"][0]}, {"T": t["T"][1]}]})))
        return case("products", "jnp.tensordot", [a, b], {"axes": axes}, mode=mode)
    if which == "einsum":
        spec = draw(st.sampled_from(["ij,jk->ik", "i,i->", "ij->ji", "ij,jk", "bij,bjk->bik",
                                     "ii->i", "i,j->ij", "ij,kl->", "ab,bc->ac", "ij,j->i",
                                     "...j,j->...", "ijk", "i->ii"]))
        return case("products", "jnp.einsum", [spec, a, b] if "," in spec else [spec, a],
                    mode=mode)
    if which == "lax.dot_general":
        ca = draw(st.lists(st.integers(-1, len(a_shape)), max_size=2))
        cb = draw(st.lists(st.integers(-1, len(b_shape)), max_size=2))
        ba = draw(st.lists(st.integers(0, 2), max_size=1))
        bb = list(ba) if draw(st.integers(0, 3)) else draw(st.lists(st.integers(0, 2),
                                                                    max_size=1))
        dims = tup(tup(tup(*ca), tup(*cb)), tup(tup(*ba), tup(*bb)))
        kwargs = {}
        if draw(st.integers(0, 3)) == 0:
            kwargs["preferred_element_type"] = {"D": draw(st.sampled_from(NUMERIC))}
        return case("products", which, [a, b, dims], kwargs, mode=mode)
    if which == "op:@":
        return case("products", which, [a, b], mode=mode)
    if which == "lax.batch_matmul":
        return case("products", which, [a, b], mode=mode)
    kwargs = {}
    if which in ("matmul", "dot") and draw(st.integers(0, 4)) == 0:
        kwargs["precision"] = draw(st.sampled_from(["highest", "default", "bogus", None]))
    op = which if which.startswith("lax.") else "jnp." + which
    return case("products", op, [a, b], kwargs, mode=mode)


@st.composite
def index_items(draw, ndim):
    """One index item: an int (sometimes out of bounds), a slice, None, Ellipsis, an
    integer array or a boolean mask."""
    return draw(st.one_of(
        st.integers(-6, 6),
        st.builds(lambda a, b, c: {"S": [a, b, c]}, st.one_of(st.none(), st.integers(-5, 5)),
                  st.one_of(st.none(), st.integers(-5, 5)),
                  st.one_of(st.none(), st.sampled_from([1, 2, -1, 0]))),
        st.none(),
        st.just({"E": 0}),
        st.builds(lambda n, seed: array([n], "int32", seed=seed), st.integers(0, 3),
                  st.integers(0, 100)),
        st.sampled_from([1.5, "a", [0, 1], True]),
    ))


@st.composite
def indexing(draw):
    mode = draw(MODES)
    shape = draw(shapes(min_dims=1, max_dims=3))
    x = draw(arrays(shape=shape, dtypes=["float32", "int32", "bool", "int8"]))
    n = draw(st.integers(1, len(shape) + 1))
    items = [draw(index_items(len(shape))) for _ in range(n)]
    if draw(st.integers(0, 5)) == 0:
        items = [array(shape, "bool", seed=draw(st.integers(0, 100)))]
    index = items[0] if len(items) == 1 else tup(*items)
    which = draw(st.sampled_from(["op:getitem"] * 3 + ["at:set", "at:add", "at:mul", "at:min",
                                                       "at:max", "at:get", "jnp.take",
                                                       "jnp.take_along_axis"]))
    if which == "op:getitem":
        return case("indexing", which, [x, index], mode=mode)
    if which == "at:get":
        kwargs = {"mode": draw(st.sampled_from(["clip", "fill"]))} if draw(st.booleans()) else {}
        return case("indexing", which, [x, index], kwargs, mode=mode)
    if which.startswith("at:"):
        value = draw(st.one_of(st.sampled_from([1, 2.5, -1, True, 300]),
                               arrays(shape=draw(st.sampled_from([[], [1], [2], shape[-1:]])))))
        kwargs = {}
        if draw(st.integers(0, 4)) == 0:
            kwargs["mode"] = draw(st.sampled_from(["drop", "clip", "promise_in_bounds",
                                                   "bogus"]))
        return case("indexing", which, [x, index, value], kwargs, mode=mode)
    indices = array(draw(st.sampled_from([[2], [], shape, [1] * len(shape)])), "int32",
                    seed=draw(st.integers(0, 100)))
    kwargs = {"axis": draw(st.one_of(st.none(), st.integers(-len(shape) - 1, len(shape))))}
    if which == "jnp.take" and draw(st.booleans()):
        kwargs["mode"] = draw(st.sampled_from(["clip", "wrap", "fill", "raise", "bogus"]))
    if which == "jnp.take_along_axis" and kwargs["axis"] is None and draw(st.booleans()):
        del kwargs["axis"]
    return case("indexing", which, [x, indices], kwargs, mode=mode)


DTYPE_NAMES = DTYPES + ["float64", "int64", "uint64", "complex128", "float8_e4m3fn", "int4"]


@st.composite
def dtypes(draw):
    mode = draw(MODES)
    which = draw(st.sampled_from(["scalar", "astype", "array", "asarray", "convert",
                                  "result_type", "promote_types", "bitcast", "iinfo", "finfo",
                                  "can_cast", "issubdtype"]))
    if which == "scalar":
        name = draw(st.sampled_from(DTYPE_NAMES[:10] + ["float_", "int_", "bool_"]))
        return case("dtypes", "scalar:type", [name, draw(st.sampled_from(PY_SCALARS))],
                    mode=mode)
    if which == "astype":
        x = draw(arrays())
        target = draw(st.sampled_from(DTYPE_NAMES))
        return case("dtypes", "method:astype", [x, {"D": target} if draw(st.integers(0, 5))
                                                  else target], mode=mode)
    if which in ("array", "asarray"):
        obj = draw(st.one_of(
            st.sampled_from(PY_SCALARS),
            st.lists(st.sampled_from([0, 1, 2.5, -1, True, 2**40, {"C": [1.0, 2.5]}]),
                     max_size=4),
            st.just([[1, 2], [3]]), st.just([[1, 2], [3, 4]]), st.just("abc"),
            arrays()))
        kwargs = {}
        if draw(st.booleans()):
            kwargs["dtype"] = {"D": draw(st.sampled_from(DTYPE_NAMES))}
        return case("dtypes", "jnp." + which, [obj], kwargs, mode=mode)
    if which == "convert":
        return case("dtypes", "lax.convert_element_type",
                    [draw(arrays()), {"D": draw(st.sampled_from(DTYPE_NAMES))}], mode=mode)
    if which == "bitcast":
        return case("dtypes", "lax.bitcast_convert_type",
                    [draw(arrays(dtypes=NUMERIC)), {"D": draw(st.sampled_from(NUMERIC))}],
                    mode=mode)
    a = draw(st.one_of(st.sampled_from(DTYPE_NAMES).map(lambda d: {"D": d}),
                       st.sampled_from([1, 1.0, True, {"C": [0.0, 1.0]}])))
    b = draw(st.one_of(st.sampled_from(DTYPE_NAMES).map(lambda d: {"D": d}),
                       st.sampled_from([1, 2.5]), arrays()))
    if which in ("iinfo", "finfo"):
        return case("dtypes", "jnp." + which, [a], mode="eager")
    if which == "promote_types":
        return case("dtypes", "jnp.promote_types", [a, b], mode="eager")
    if which == "can_cast":
        return case("dtypes", "jnp.can_cast", [a, b], mode="eager")
    if which == "issubdtype":
        kind = draw(st.sampled_from(["floating", "integer", "number", "inexact", "bool_",
                                     "complexfloating", "signedinteger"]))
        return case("dtypes", "jnp.issubdtype", [a, {"D": kind}], mode="eager")
    return case("dtypes", "jnp.result_type", [a, b], mode=mode)


@st.composite
def slicing(draw):
    mode = draw(MODES)
    shape = draw(shapes(min_dims=1, max_dims=3))
    ndim = len(shape)
    x = draw(arrays(shape=shape, dtypes=NUMERIC + ["bool"]))
    which = draw(st.sampled_from(["lax.slice", "lax.dynamic_slice", "lax.dynamic_update_slice",
                                  "jnp.pad", "lax.pad", "jnp.sort", "jnp.argsort", "lax.sort",
                                  "jnp.where", "jnp.clip", "lax.dynamic_index_in_dim",
                                  "lax.index_in_dim", "lax.slice_in_dim", "jnp.flatnonzero",
                                  "jnp.nonzero", "lax.top_k", "jnp.searchsorted",
                                  "jnp.unique"]))
    ints = lambda lo, hi: st.lists(st.integers(lo, hi), min_size=ndim - 1 if draw(  # noqa: E731
        st.integers(0, 5)) == 0 else ndim, max_size=ndim)
    if which == "lax.slice":
        start = draw(ints(-1, 4))
        limit = draw(ints(0, 5))
        kwargs = {}
        if draw(st.booleans()):
            kwargs["strides"] = tup(*draw(ints(0, 3)))
        return case("slicing", which, [x, tup(*start), tup(*limit)], kwargs, mode=mode)
    if which == "lax.dynamic_slice":
        return case("slicing", which, [x, draw(ints(-5, 5)), tup(*draw(ints(0, 5)))],
                    mode=mode)
    if which == "lax.dynamic_update_slice":
        update = draw(arrays(shape=[min(s, draw(st.integers(0, 5))) for s in shape],
                             dtypes=[x["A" if "A" in x else "N"][1], "float32"]))
        return case("slicing", which, [x, update, draw(ints(-5, 5))], mode=mode)
    if which == "jnp.pad":
        width = draw(st.one_of(st.integers(-1, 2),
                               st.lists(st.integers(-1, 2), min_size=2, max_size=2)
                               .map(lambda w: tup(*w)),
                               st.lists(st.lists(st.integers(-1, 2), min_size=2, max_size=2)
                                        .map(lambda w: tup(*w)), min_size=ndim, max_size=ndim)
                               .map(lambda ws: tup(*ws))))
        mode_name = draw(st.sampled_from(["constant", "edge", "reflect", "wrap", "symmetric",
                                          "maximum", "bogus", "linear_ramp", "empty"]))
        return case("slicing", which, [x, width], {"mode": mode_name}, mode=mode)
    if which == "lax.pad":
        config = [tup(draw(st.integers(-2, 2)), draw(st.integers(-2, 2)),
                      draw(st.integers(-1, 2))) for _ in range(draw(st.sampled_from(
                          [ndim, ndim, ndim - 1])))]
        return case("slicing", which, [x, draw(st.sampled_from([0, 0.0, 1.5])), config],
                    mode=mode)
    if which in ("jnp.sort", "jnp.argsort"):
        kwargs = {"axis": draw(st.one_of(st.none(), st.integers(-ndim - 1, ndim)))}
        if draw(st.integers(0, 3)) == 0:
            kwargs["descending"] = True
        if draw(st.integers(0, 4)) == 0:
            kwargs["stable"] = draw(st.booleans())
        return case("slicing", which, [x], kwargs, mode=mode)
    if which == "lax.sort":
        operands = x if draw(st.booleans()) else [x, draw(arrays(shape=shape))]
        return case("slicing", which, [operands], {"dimension": draw(st.integers(-2, ndim))},
                    mode=mode)
    if which == "jnp.where":
        cond = array(draw(st.sampled_from([shape, shape[-1:], [], [5]])), "bool", seed=3)
        if draw(st.integers(0, 4)) == 0:
            return case("slicing", which, [cond], {"size": draw(st.integers(0, 4))}, mode=mode)
        return case("slicing", which, [cond, x, operand(draw, shape)], mode=mode)
    if which == "jnp.clip":
        return case("slicing", which, [x], {"min": draw(st.sampled_from([None, 0, -1.5])),
                                            "max": draw(st.sampled_from([None, 2, 1]))},
                    mode=mode)
    if which in ("lax.dynamic_index_in_dim", "lax.index_in_dim"):
        return case("slicing", which, [x, draw(st.integers(-5, 5))],
                    {"axis": draw(st.integers(-ndim - 1, ndim)),
                     "keepdims": draw(st.booleans())}, mode=mode)
    if which == "lax.slice_in_dim":
        return case("slicing", which, [x, draw(st.integers(-5, 5)), draw(st.integers(-5, 5))],
                    {"axis": draw(st.integers(-ndim - 1, ndim))}, mode=mode)
    if which in ("jnp.flatnonzero", "jnp.nonzero", "jnp.unique"):
        kwargs = {}
        if draw(st.booleans()) or mode == "jit":
            kwargs["size"] = draw(st.integers(0, 4))
            if draw(st.booleans()):
                kwargs["fill_value"] = draw(st.sampled_from([0, -1, 2.5]))
        return case("slicing", which, [x], kwargs, mode=mode)
    if which == "lax.top_k":
        return case("slicing", which, [x, draw(st.integers(-1, 5))], mode=mode)
    sorted_side = array([draw(st.integers(0, 4))], x[next(iter(x))][1], seed=4)
    return case("slicing", which, [sorted_side, x],
                {"side": draw(st.sampled_from(["left", "right", "middle"]))}, mode=mode)


@st.composite
def jit_options(draw):
    fun = draw(st.sampled_from(["power_n", "scale_by", "mul", "add"]))
    options = {}
    if draw(st.booleans()):
        options["static_argnums"] = draw(st.one_of(st.integers(-3, 3),
                                                   st.lists(st.integers(-2, 2), max_size=2)
                                                   .map(lambda s: tup(*s))))
    if draw(st.integers(0, 2)) == 0:
        options["static_argnames"] = draw(st.sampled_from(["n", "y", "b", "zz"]))
    if draw(st.integers(0, 2)) == 0:
        options["donate_argnums"] = draw(st.integers(-1, 2))
    second = draw(st.one_of(st.sampled_from([2, 3.0, -1, [1, 2], {"T": [1, 2]}, None]),
                            arrays(shape=[3], dtypes=["float32", "int32"])))
    x = array([3], draw(st.sampled_from(["float32", "int32"])), seed=5)
    return case("jit options", "T:jit", [{"F": fun}, {"dict": options}, x, second],
                mode="eager")


@st.composite
def vmap_axes(draw):
    mode = draw(MODES)
    fun = draw(st.sampled_from(["mul", "add", "sin_sum", "pair", "identity", "to_int"]))
    nargs = 2 if fun in ("mul", "add") else 1
    size = draw(st.integers(0, 3))
    args = []
    for i in range(nargs):
        shape = draw(st.sampled_from([[size, 2], [2, size], [size], [], [size + 1, 2]]))
        args.append(array(shape, "float32", seed=i))
    options = {}
    if draw(st.booleans()):
        axes = [draw(st.one_of(st.none(), st.integers(-3, 2))) for _ in range(nargs)]
        options["in_axes"] = axes[0] if nargs == 1 and draw(st.booleans()) else tup(*axes)
    if draw(st.integers(0, 2)) == 0:
        options["out_axes"] = draw(st.one_of(st.integers(-3, 2), st.none()))
    if draw(st.integers(0, 3)) == 0:
        options["axis_size"] = draw(st.integers(0, 4))
    return case("vmap axes", "T:vmap", [{"F": fun}, {"dict": options}, *args], mode=mode)


@st.composite
def autodiff(draw):
    mode = draw(MODES)
    which = draw(st.sampled_from(["T:grad", "T:value_and_grad", "T:jvp", "T:vjp",
                                  "T:linearize", "T:jacfwd", "T:jacrev", "T:hessian"]))
    fun = draw(st.sampled_from(["sin_sum", "square_sum", "mul_sum", "pair", "with_aux",
                                "identity", "to_int", "python_if", "tanh_dot", "mul"]))
    nargs = 2 if fun in ("mul_sum", "tanh_dot", "mul") else 1
    dtype = draw(st.sampled_from(["float32", "float32", "int32", "float16", "complex64"]))
    shape = draw(st.sampled_from([[3], [], [2, 3]]))
    primals = [array(shape if not (fun == "tanh_dot" and i == 0) else [shape[-1] if shape
                                                                       else 1, 2],
                     dtype, seed=10 + i) for i in range(nargs)]
    if which in ("T:jvp", "T:linearize"):
        t_dtype = dtype if draw(st.integers(0, 3)) else draw(st.sampled_from(["float32",
                                                                             "int32"]))
        t_shape = shape if draw(st.integers(0, 4)) else [4]
        tangents = [array(t_shape if i else shape, t_dtype, seed=20 + i)
                    for i in range(nargs)]
        if which == "T:jvp":
            return case("autodiff", which, [{"F": fun}, tup(*primals), tup(*tangents)],
                        mode=mode)
        return case("autodiff", which, [{"F": fun}, primals, tangents], mode=mode)
    if which == "T:vjp":
        cot = draw(st.sampled_from([array([], "float32", seed=7), array(shape, "float32"),
                                    array([5], "float32")]))
        return case("autodiff", which, [{"F": fun}, primals, cot], mode=mode)
    options = {}
    if draw(st.booleans()):
        options["argnums"] = draw(st.one_of(st.integers(-2, 2),
                                            st.lists(st.integers(0, 2), min_size=1, max_size=2)
                                            .map(lambda s: tup(*s))))
    if which in ("T:grad", "T:value_and_grad") and draw(st.integers(0, 2)) == 0:
        options["has_aux"] = True
    if which in ("T:grad", "T:value_and_grad") and draw(st.integers(0, 4)) == 0:
        options["allow_int"] = True
    return case("autodiff", which, [{"F": fun}, {"dict": options}, *primals], mode=mode)


@st.composite
def trees(draw):
    leaf = st.one_of(st.integers(-3, 3), st.just(None), arrays(shape=[2]))
    tree = st.recursive(leaf, lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(lambda c: tup(*c)),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3)
        .map(lambda d: {"dict": d})), max_leaves=6)
    which = draw(st.sampled_from(["tree_map", "tree_leaves", "tree_structure", "tree_flatten",
                                  "tree_reduce", "tree_all", "roundtrip", "tree_map2"]))
    first = draw(tree)
    if which in ("tree_map", "tree_map2"):
        fun = "neg" if which == "tree_map" else "add"
        args = [{"F": fun}, first] + ([draw(st.one_of(st.just(first), tree))]
                                      if which == "tree_map2" else [])
        return case("trees", "tree:tree_map", args)
    if which == "tree_reduce":
        return case("trees", "tree:tree_reduce", [{"F": "add"}, first, 0])
    if which == "roundtrip":
        return case("trees", "tree:roundtrip", [first, draw(st.lists(st.integers(0, 3),
                                                                     max_size=5))])
    kwargs = {"is_leaf": {"F": "is_none"}} if draw(st.integers(0, 3)) == 0 else {}
    return case("trees", "tree:" + which, [first], kwargs)


@st.composite
def creation(draw):
    mode = draw(MODES)
    which = draw(st.sampled_from(["zeros", "ones", "full", "empty", "arange", "linspace",
                                  "logspace", "eye", "identity", "tri", "tril", "triu",
                                  "zeros_like", "full_like", "ones_like", "meshgrid",
                                  "geomspace", "diag", "fromfunction_like"]))
    dtype = draw(st.one_of(st.none(), st.sampled_from(DTYPE_NAMES).map(lambda d: {"D": d})))
    kw = {"dtype": dtype} if dtype is not None else {}
    # Sizes past memory (RESOURCE_EXHAUSTED), past int64 (InvalidShapeError), negative.
    huge = st.sampled_from([2**62, 2**40, -1, -3, 2**63 - 1])
    if which in ("zeros", "ones", "empty", "full"):
        shape = draw(st.one_of(shapes().map(lambda s: tup(*s)), st.integers(-2, 4),
                               huge.map(lambda n: tup(n)), huge.map(lambda n: tup(n, n)),
                               st.sampled_from([2.5, "a", tup(2.0, 3)])))
        args = [shape] + ([draw(st.sampled_from([1, 2.5, True, 300, -1, {"C": [0.0, 1.0]}]))]
                          if which == "full" else [])
        return case("creation", "jnp." + which, args, kw, mode=mode)
    if which == "arange":
        args = draw(st.lists(st.sampled_from([0, 1, 5, -3, 2.5, 0.5, 10, -1, 0.0]), min_size=1,
                             max_size=3))
        return case("creation", "jnp.arange", args, kw, mode="eager")
    if which in ("linspace", "logspace", "geomspace"):
        args = [draw(st.sampled_from([0, 1, -2.5, 2])), draw(st.sampled_from([1, 10, 0, 3.5])),
                draw(st.sampled_from([0, 1, 2, 5, -1, 2.5]))]
        kwargs = dict(kw)
        if draw(st.booleans()):
            kwargs["endpoint"] = draw(st.booleans())
        if which == "linspace" and draw(st.booleans()):
            kwargs["retstep"] = True
        return case("creation", "jnp." + which, args, kwargs, mode=mode)
    if which in ("eye", "tri"):
        args = [draw(st.integers(-1, 4))]
        kwargs = dict(kw, M=draw(st.one_of(st.none(), st.integers(-1, 4))),
                      k=draw(st.integers(-5, 5)))
        return case("creation", "jnp." + which, args, kwargs, mode=mode)
    if which == "identity":
        return case("creation", "jnp.identity", [draw(st.integers(-1, 4))], kw, mode=mode)
    if which in ("tril", "triu", "diag"):
        x = draw(arrays(shape=draw(shapes(min_dims=0, max_dims=3))))
        return case("creation", "jnp." + which, [x], {"k": draw(st.integers(-3, 3))},
                    mode=mode)
    if which == "meshgrid":
        xs = [draw(arrays(shape=[draw(st.integers(0, 3))])) for _ in range(draw(
            st.integers(0, 3)))]
        kwargs = {"indexing": draw(st.sampled_from(["xy", "ij", "bogus"]))}
        return case("creation", "jnp.meshgrid", xs, kwargs, mode=mode)
    x = draw(arrays())
    if which == "full_like":
        return case("creation", "jnp.full_like", [x, draw(st.sampled_from([1, 2.5, 300,
                                                                           True]))], kw,
                    mode=mode)
    if which == "fromfunction_like":
        return case("creation", "jnp.zeros_like", [x], dict(kw, shape=tup(
            *draw(shapes()))), mode=mode)
    return case("creation", "jnp." + which, [x], kw, mode=mode)


@st.composite
def methods(draw):
    """Array methods and Python protocols (`bool`, `int`, `len`, `tolist`, `item`...)."""
    mode = draw(MODES)
    shape = draw(shapes(min_dims=0, max_dims=2))
    x = draw(arrays(shape=shape))
    which = draw(st.sampled_from(["op:bool", "op:int", "op:float", "op:len", "method:item",
                                  "method:tolist", "method:sum", "method:mean", "method:max",
                                  "method:argmax", "method:cumsum", "method:clip",
                                  "method:round", "method:squeeze", "method:flatten",
                                  "method:swapaxes", "method:repeat", "method:sort",
                                  "method:transpose", "op:neg", "op:~", "op:abs"]))
    if which in ("method:sum", "method:mean", "method:max", "method:argmax", "method:cumsum",
                 "method:sort"):
        return case("methods", which, [x], {"axis": axis_for(draw, len(shape),
                                                             allow_tuple=False)}, mode=mode)
    if which == "method:clip":
        return case("methods", which, [x, draw(st.sampled_from([0, None, -1.5])),
                                       draw(st.sampled_from([2, None]))], mode=mode)
    if which == "method:round":
        return case("methods", which, [x, draw(st.integers(-1, 2))], mode=mode)
    if which == "method:swapaxes":
        return case("methods", which, [x, draw(st.integers(-3, 2)), draw(st.integers(-3, 2))],
                    mode=mode)
    if which == "method:repeat":
        return case("methods", which, [x, draw(st.integers(0, 2))], mode=mode)
    if which in ("op:bool", "op:int", "op:float", "op:len", "method:item", "method:tolist"):
        mode = "eager" if draw(st.integers(0, 2)) else mode
    return case("methods", which, [x], mode=mode)


EMPTY_OPS = ["jnp.median", "jnp.nanmedian", "jnp.percentile", "jnp.quantile",
             "jnp.nanpercentile", "jnp.gcd", "jnp.lcm", "jnp.argwhere", "jnp.sort",
             "jnp.argsort", "jnp.cumsum", "jnp.mean", "jnp.var", "jnp.prod", "jnp.max",
             "jnp.sum", "jnp.average", "jnp.ptp", "jnp.flatnonzero", "jnp.diff",
             "jnp.linalg.norm", "jnp.outer", "jnp.matmul", "jnp.dot", "jnp.cumprod"]
LOOPS = ["loop:while_false", "loop:while_count", "loop:while_sum", "loop:fori",
         "loop:scan", "loop:vmap_while", "loop:scan_carry_dtype", "loop:while_carry_dtype",
         "loop:fori_carry_shape", "loop:cond_branches", "loop:cond_weak"]
INPUT_KINDS = ["jnp.asarray", "jnp.array", "jnp.sum", "op:+", "jnp.add", "jnp.shape",
               "jnp.mean", "T:jit"]


@st.composite
def empty_shapes(draw):
    """A shape with at least one zero-length dimension."""
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=3))
    shape[draw(st.integers(0, len(shape) - 1))] = 0
    return shape


@st.composite
def faults(draw):
    """What found the crashes and silent differences of issue 31: empty arrays,
    zero-trip loops, masked and structured NumPy inputs, donation combinations."""
    mode = draw(MODES)
    kind = draw(st.sampled_from(["empty", "empty", "loop", "loop", "input", "donation"]))
    if kind == "empty":
        op = draw(st.sampled_from(EMPTY_OPS))
        x = draw(arrays(dtypes=["float32", "int32", "bool", "complex64", "float16"],
                        shape=draw(empty_shapes())))
        args, kwargs = [x], {}
        if op in ("jnp.gcd", "jnp.lcm"):
            x = draw(arrays(dtypes=["int32", "int8", "uint8"], shape=draw(empty_shapes())))
            args = [x, draw(st.sampled_from([3, x]))]
        elif op in ("jnp.outer", "jnp.matmul", "jnp.dot"):
            args = [x, draw(arrays(dtypes=["float32"], shape=draw(shapes(max_dims=2))))]
        elif op in ("jnp.percentile", "jnp.quantile", "jnp.nanpercentile"):
            args.append(draw(st.sampled_from([0.5, 50, 0, 100, tup(0.25, 0.75)])))
        if op not in ("jnp.argwhere", "jnp.flatnonzero", "jnp.gcd", "jnp.lcm", "jnp.outer",
                      "jnp.matmul", "jnp.dot") and draw(st.booleans()):
            kwargs["axis"] = draw(st.sampled_from([0, -1, None]))
        return case("faults", op, args, kwargs, mode=mode)
    if kind == "loop":
        op = draw(st.sampled_from(LOOPS))
        x = draw(arrays(dtypes=["float32", "int32", "float16"],
                        shape=draw(st.one_of(empty_shapes(), shapes(max_dims=2)))))
        return case("faults", op, [x, draw(st.integers(-1, 3))], mode=mode)
    if kind == "input":
        shape = draw(shapes(max_dims=2))
        dtype = draw(st.sampled_from(["float32", "int32", "bool"]))
        seed = draw(st.integers(0, 100))
        host = ({"M": [shape, dtype, "normal", seed]} if draw(st.booleans())
                else {"R": [shape, seed]})
        op = draw(st.sampled_from(INPUT_KINDS))
        if op == "T:jit":
            return case("faults", op, [{"F": "identity"}, {"dict": {}}, host], mode=mode)
        args = [host, draw(arrays(shape=shape))] if op in ("op:+", "jnp.add") else [host]
        return case("faults", op, args, mode=mode)
    donate = draw(st.sampled_from([tup(0), tup(1), tup(0, 1), tup()]))
    same = draw(st.booleans())
    x = draw(arrays(dtypes=["float32", "int32"], shape=draw(st.sampled_from([[4], [2, 2],
                                                                             [0], []]))))
    return case("faults", "donate:call",
                [donate, same, draw(st.booleans()), x], mode="eager")


FAMILIES = {
    "elementwise": elementwise, "reductions": reductions, "shape ops": shape_ops,
    "concatenation": concatenation, "products": products, "indexing": indexing,
    "dtypes": dtypes, "slicing": slicing, "jit options": jit_options,
    "vmap axes": vmap_axes, "autodiff": autodiff, "trees": trees, "creation": creation,
    "methods": methods, "faults": faults,
}


def generate(n_cases: int, seed: int = 0, families=None) -> list[dict]:
    """`n_cases` distinct cases, the same ones on every run with the same arguments.

    Generation is separate from running, so what the cases do cannot steer which
    cases come next (a failure would otherwise start hypothesis's shrinker, and the
    run would count its repeats). The seed reaches hypothesis directly, the example
    database is off, only the generate phase runs, and no strategy reads the clock;
    duplicates (about one draw in six) are dropped, drawing up to three times as
    many as asked."""
    chosen = families or list(FAMILIES)
    strategy = st.one_of(*(FAMILIES[f]() for f in chosen))
    unique: dict[str, dict] = {}

    @hypothesis.settings(max_examples=3 * n_cases, database=None, derandomize=False,
                         phases=[hypothesis.Phase.generate], deadline=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.seed(seed)
    @hypothesis.given(case=strategy)
    def draw(case):
        if len(unique) < n_cases:
            unique.setdefault(json.dumps(case, sort_keys=True), case)

    draw()
    return list(unique.values())
