"""The worker of the differential fuzzer: runs cases on plax or on JAX.

    python fuzz_worker.py plax|jax

Reads one case per line (JSON) on stdin and answers each with one line
`@@ <outcome JSON>` on stdout: the returned value (dtype, shape, weak type and bytes
of each leaf) or the raised exception (its class, the names of its class hierarchy
and its message). A crash or hang is what the parent sees when no answer comes.

A case is data, so both libraries run exactly the same call:
`{"op": ..., "args": [...], "kwargs": {...}, "mode": "eager" | "jit"}`. `op` names
a function of the library (`jnp.add`, `lax.dot_general`, `jax.vmap`) or one of the
small programs below (`op:+`, `at:set`, `T:grad`...). Arguments are JSON with
tagged objects: `{"A": [shape, dtype, fill, seed]}` an array, `{"N": ...}` the same
as a NumPy array, `{"C": [re, im]}` a complex, `{"T": [...]}` a tuple,
`{"S": [start, stop, step]}` a slice, `{"E": 0}` Ellipsis, `{"D": name}` a dtype,
`{"F": name}` one of the programs in `FUNCTIONS`, `{"dict": {...}}` a dict. Under
`"mode": "jit"`, the call runs inside `jit` with every array argument traced.
"""
from __future__ import annotations

import base64
import json
import os
import sys
import traceback
import warnings

import ml_dtypes
import numpy as np

OUT_PREFIX = "@@ "


class Library:
    """`jax`, `jnp`, `lax` and `tree_util` of one library."""

    def __init__(self, name: str):
        if name == "plax":
            import plax as jax
            import plax.numpy as jnp
            from plax import lax, tree_util
        elif name == "jax":
            import jax
            import jax.numpy as jnp
            from jax import lax, tree_util
            # Whole tracebacks: where an exception came from decides whether it is an
            # internal error (fuzz_runner.is_internal).
            jax.config.update("jax_traceback_filtering", "off")
        else:
            raise SystemExit(f"unknown library {name!r}")
        self.name, self.jax, self.jnp, self.lax, self.tree_util = name, jax, jnp, lax, tree_util

    def resolve(self, dotted: str):
        head, _, rest = dotted.partition(".")
        obj = {"jax": self.jax, "jnp": self.jnp, "lax": self.lax,
               "tree_util": self.tree_util}[head]
        for part in rest.split("."):
            obj = getattr(obj, part)
        return obj


# --- inputs --------------------------------------------------------------------------

def _np_dtype(name: str) -> np.dtype:
    if name == "float0":
        return np.dtype([("float0", np.void, 0)])
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def host_array(shape, dtype: str, fill: str, seed: int) -> np.ndarray:
    """A deterministic NumPy array: small integers (exact in every dtype), positive
    values, zeros, or specials (nan, inf, -0.)."""
    rng = np.random.default_rng(seed)
    dt = _np_dtype(dtype)
    shape = tuple(shape)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dt, np.unsignedinteger):
        low, high = (1, 6) if fill == "pos" else (0, 10)
        return rng.integers(low, high, shape).astype(dt)
    if fill == "zeros":
        return np.zeros(shape, dt)
    if fill == "pos":
        values = rng.integers(1, 6, shape).astype(np.float64)
    else:
        values = rng.integers(-5, 6, shape).astype(np.float64)
    if np.issubdtype(dt, np.integer):
        return values.astype(dt)
    values = values / 2  # halves: exact in every float type
    if fill == "special" and values.size:
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
        mask = rng.integers(0, 3, shape) == 0
        values = np.where(mask, rng.choice(specials, shape), values)
    if np.issubdtype(dt, np.complexfloating):
        return (values + 1j * rng.integers(-3, 4, shape) / 2).astype(dt)
    return values.astype(dt)


def decode(value, lib: Library, arrays: list):
    """The Python value a JSON argument stands for; device arrays are appended to
    `arrays` (the arguments that `jit` mode traces)."""
    if isinstance(value, list):
        return [decode(v, lib, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    (tag, body), = value.items()
    if tag == "A":
        array = lib.jnp.asarray(host_array(*body))
        arrays.append(array)
        return array
    if tag == "N":
        return host_array(*body)
    if tag == "M":  # a NumPy masked array, about a third of it masked
        data = host_array(*body)
        mask = np.random.default_rng(body[3]).integers(0, 3, data.shape) == 0
        return np.ma.masked_array(data, mask=mask)
    if tag == "R":  # a NumPy structured array
        shape, seed = body
        record = np.zeros(shape, dtype=[("a", np.float32), ("b", np.int32)])
        record["a"] = host_array(shape, "float32", "normal", seed)
        record["b"] = host_array(shape, "int32", "normal", seed + 1)
        return record
    if tag == "C":
        return complex(*body)
    if tag == "T":
        return tuple(decode(v, lib, arrays) for v in body)
    if tag == "S":
        return slice(*body)
    if tag == "E":
        return Ellipsis
    if tag == "D":
        return getattr(lib.jnp, body) if body != "float0" else body
    if tag == "F":
        return FUNCTIONS[body](lib)
    if tag == "dict":
        return {k: decode(v, lib, arrays) for k, v in body.items()}
    raise ValueError(f"unknown tag {tag!r}")


# --- programs the cases can name -------------------------------------------------------

def _python_if(lib):
    def f(x):
        return x if x.sum() > 0 else -x
    return f


FUNCTIONS = {
    "sin_sum": lambda L: lambda x: L.jnp.sum(L.jnp.sin(x)),
    "square_sum": lambda L: lambda x: (x * x).sum(),
    "mul": lambda L: lambda x, y: x * y,
    "mul_sum": lambda L: lambda x, y: L.jnp.sum(x * y),
    "power_n": lambda L: lambda x, n: x ** n,
    "scale_by": lambda L: lambda x, n: x * n,
    "pair": lambda L: lambda x: (x, 2 * x),
    "with_aux": lambda L: lambda x: (L.jnp.sum(x ** 2), x + 1),
    "identity": lambda L: lambda x: x,
    "to_int": lambda L: lambda x: x.astype(L.jnp.int32),
    "python_if": _python_if,
    "dict_in": lambda L: lambda d: d["a"] * 2 + L.jnp.sum(d["b"]),
    "tanh_dot": lambda L: lambda w, x: L.jnp.tanh(x @ w).sum(),
    "add": lambda L: lambda a, b: a + b,
    "neg": lambda L: lambda a: -a,
    "is_none": lambda L: lambda a: a is None,
}


# Loops taking the library, an array `x` and a small int `n`: zero-trip loops, empty carries, and
# bodies or branches whose types do not match the carry (JAX's TypeErrors).
_LOOPS = {
    "while_false": lambda L, x, n: L.lax.while_loop(lambda c: False, lambda c: c + 1, x),
    "while_count": lambda L, x, n: L.lax.while_loop(
        lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2 + 1), (0, x)),
    "while_sum": lambda L, x, n: L.lax.while_loop(lambda c: L.jnp.any(c < n),
                                                  lambda c: c + 1, x),
    "fori": lambda L, x, n: (L.lax.fori_loop(0, n, lambda i, c: c * 2 + i, x),
                             L.lax.fori_loop(0, L.jnp.asarray(n), lambda i, c: c - i, x)),
    "scan": lambda L, x, n: L.lax.scan(lambda c, xi: (c + xi, c * xi),
                                       L.jnp.zeros_like(x[0]), x),
    "vmap_while": lambda L, x, n: L.jax.vmap(
        lambda v: L.lax.while_loop(lambda c: c < n, lambda c: c + 1, v))(x),
    "scan_carry_dtype": lambda L, x, n: L.lax.scan(
        lambda c, _: (c.astype(L.jnp.int32), None), x, None, length=max(n, 0)),
    "while_carry_dtype": lambda L, x, n: L.lax.while_loop(
        lambda c: False, lambda c: c.astype(L.jnp.float32), x),
    "fori_carry_shape": lambda L, x, n: L.lax.fori_loop(
        0, n, lambda i, c: L.jnp.concatenate([c.ravel(), c.ravel()]), x),
    "cond_branches": lambda L, x, n: L.lax.cond(
        n > 0, lambda v: v, lambda v: v.astype(L.jnp.float32), x),
    "cond_weak": lambda L, x, n: L.lax.cond(n > 0, lambda v: v + 1, lambda v: 2.0, x),
}


def _donation(lib, donate_argnums, same, split, x):
    """`jit(a * 2 + b, donate_argnums=...)(x, x or a copy)`, with `x` split over two
    devices or not; the result and which arguments were deleted."""
    if split and x.ndim and x.shape[0] % 2 == 0:
        from importlib import import_module
        sharding = import_module(lib.name + ".sharding")
        mesh = sharding.Mesh(np.array(lib.jax.devices()[:2]), ("d",))
        x = lib.jax.device_put(x, sharding.NamedSharding(mesh, sharding.PartitionSpec("d")))
    y = x if same else lib.jnp.copy(x)
    out = lib.jax.jit(lambda a, b: a * 2 + b, donate_argnums=donate_argnums)(x, y)
    return out, x.is_deleted(), y.is_deleted()


def _at(method):
    def run(lib, x, index, *args, **kwargs):
        return getattr(x.at[index], method)(*args, **kwargs)
    return run


def _transform(name):
    """`T:<name>`: apply `jax.<name>(fun, **options)` and call the result."""
    def run(lib, fun, options, *args):
        return getattr(lib.jax, name)(fun, **(options or {}))(*args)
    return run


def _jvp(lib, fun, primals, tangents):
    return lib.jax.jvp(fun, primals, tangents)


def _vjp(lib, fun, primals, cotangent):
    out, pullback = lib.jax.vjp(fun, *primals)
    return out, pullback(cotangent)


def _linearize(lib, fun, primals, tangents):
    out, f_jvp = lib.jax.linearize(fun, *primals)
    return out, f_jvp(*tangents)


def _method(name):
    def run(lib, x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)
    return run


def _tree(name):
    def run(lib, *args, **kwargs):
        return getattr(lib.tree_util, name)(*args, **kwargs)
    return run


def _tree_roundtrip(lib, tree, leaves):
    return lib.tree_util.tree_unflatten(lib.tree_util.tree_structure(tree), leaves)


_BINARY_OPERATORS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a ** b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b, "@": lambda a, b: a @ b,
}

SPECIAL = {
    **{f"op:{k}": (lambda op: lambda lib, a, b: op(a, b))(f) for k, f in _BINARY_OPERATORS.items()},
    "op:neg": lambda lib, a: -a,
    "op:~": lambda lib, a: ~a,
    "op:abs": lambda lib, a: abs(a),
    "op:getitem": lambda lib, x, index: x[index],
    "op:bool": lambda lib, x: bool(x),
    "op:int": lambda lib, x: int(x),
    "op:float": lambda lib, x: float(x),
    "op:len": lambda lib, x: len(x),
    **{f"at:{m}": _at(m) for m in ("set", "add", "mul", "min", "max", "get")},
    **{f"T:{t}": _transform(t) for t in ("grad", "value_and_grad", "vmap", "jit", "jacfwd",
                                        "jacrev", "hessian")},
    "T:jvp": _jvp,
    "T:vjp": _vjp,
    "T:linearize": _linearize,
    **{f"method:{m}": _method(m) for m in ("astype", "reshape", "transpose", "sum", "mean",
                                            "max", "argmax", "cumsum", "clip", "round",
                                            "squeeze", "flatten", "ravel", "item", "tolist",
                                            "swapaxes", "repeat", "sort", "view")},
    **{f"tree:{t}": _tree(t) for t in ("tree_map", "tree_leaves", "tree_structure",
                                        "tree_flatten", "tree_reduce", "tree_all",
                                        "tree_transpose")},
    "tree:roundtrip": _tree_roundtrip,
    "scalar:type": lambda lib, name, value: getattr(lib.jnp, name)(value),
    **{f"loop:{name}": loop for name, loop in _LOOPS.items()},
    "donate:call": _donation,
}


def callable_of(op: str, lib: Library):
    if op in SPECIAL:
        special = SPECIAL[op]
        return lambda *a, **k: special(lib, *a, **k)
    return lib.resolve(op)


# --- outputs -------------------------------------------------------------------------

def encode(value, lib: Library, depth: int = 0):
    """A JSON description of a result, leaf by leaf."""
    if depth > 8:
        return {"obj": "deep", "repr": "..."}
    if value is None:
        return {"none": True}
    if isinstance(value, (tuple, list)):
        return {"seq": [encode(v, lib, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"map": {str(k): encode(v, lib, depth + 1) for k, v in sorted(value.items(),
                                                                             key=str)}}
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        return {"py": type(value).__name__, "repr": repr(value)}
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        try:
            array = np.asarray(value)
        except Exception as err:  # e.g. float0 tangents, deleted arrays
            return {"obj": type(value).__name__, "repr": f"unconvertible: {type(err).__name__}"}
        if array.dtype.names == ("float0",):  # tangents of integers (bfloat16 is "V" too)
            return {"arr": "float0", "shape": list(array.shape), "weak": False, "data": ""}
        return {"arr": str(array.dtype), "shape": list(array.shape),
                "weak": bool(getattr(value, "weak_type", False)),
                "data": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()}
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return {"dtype": str(np.dtype(value))}
    return {"obj": type(value).__name__, "repr": repr(value)[:200]}


def describe_exception(err: BaseException) -> dict:
    """The exception's class, hierarchy and message, and where it came from: the
    innermost frame, whether that frame is the library's (not a program of this
    file), and whether its statement is a `raise` (a deliberate check) or not (the
    interpreter or a builtin raised: a failed subscript, a division, an `assert`)."""
    cls = type(err)
    frames = traceback.extract_tb(err.__traceback__)
    last = frames[-1] if frames else None
    statement = (last.line or "").lstrip() if last else ""
    return {"exc": cls.__name__, "module": cls.__module__,
            "mro": [c.__name__ for c in cls.__mro__],
            "msg": str(err)[:800],
            "where": f"{last.filename}:{last.lineno}" if last else "",
            "origin": "raise" if statement.startswith("raise") else "implicit",
            "in_library": bool(last) and os.path.abspath(last.filename) != _THIS_FILE}


_THIS_FILE = os.path.abspath(__file__)


def decode_kwargs(case: dict, lib: Library, arrays: list) -> dict:
    return {k: decode(v, lib, arrays) for k, v in case.get("kwargs", {}).items()}


def run_case(case: dict, lib: Library) -> dict:
    arrays: list = []
    try:
        fun = callable_of(case["op"], lib)
    except AttributeError as err:
        return {"missing": str(err)[:300]}
    try:
        args = decode(case.get("args", []), lib, arrays)
        kwargs = decode_kwargs(case, lib, arrays)
    except Exception as err:  # the inputs cannot even be built: report, not a plax error
        return {"bad_case": f"{type(err).__name__}: {err}"[:300]}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if case.get("mode") == "jit":
                result = _run_jitted(case, lib, fun)
            else:
                result = fun(*args, **kwargs)
            return {"value": encode(result, lib)}
    except Exception as err:
        return describe_exception(err)


def _run_jitted(case: dict, lib: Library, fun):
    """`fun` inside `jit`, every device-array argument traced (decoded afresh inside
    the traced function, so each position receives its own tracer)."""
    shells: list = []
    decode(case.get("args", []), lib, shells)
    decode_kwargs(case, lib, shells)

    def staged(*traced):
        pending = iter(traced)
        args = _substitute(case.get("args", []), lib, pending)
        kwargs = {k: _substitute(v, lib, pending) for k, v in case.get("kwargs", {}).items()}
        return fun(*args, **kwargs)

    return lib.jax.jit(staged)(*shells)


def _substitute(value, lib: Library, pending):
    """`decode`, with the next traced value standing for each device array."""
    if isinstance(value, list):
        return [_substitute(v, lib, pending) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "A":
            return next(pending)
        if tag == "T":
            return tuple(_substitute(v, lib, pending) for v in body)
        if tag == "dict":
            return {k: _substitute(v, lib, pending) for k, v in body.items()}
    return decode(value, lib, [])


def main() -> None:
    lib = Library(sys.argv[1])
    out = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    out.write(OUT_PREFIX + json.dumps({"ready": lib.name}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        outcome = run_case(case, lib)
        out.write(OUT_PREFIX + json.dumps(outcome) + "\n")


if __name__ == "__main__":
    main()
