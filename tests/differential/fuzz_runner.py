"""Running cases on plax and JAX side by side, and classifying what they did.

Each library runs in its own long-lived worker subprocess (`fuzz_worker.py`); a
worker that dies is a *crash*, one that answers nothing within the timeout a
*hang*; either is restarted for the next case. `classify` compares two outcomes:
same value (dtype, shape, weak type, values within the dtype's tolerance), same
exception class (plax's class is JAX's or a subclass of it, by name), or one of the
differences counted in the report. `is_internal` tells a bug's exception from a
deliberate check's, by class and by where it was raised, with one rule for both
libraries: plax's is a failure; JAX's is counted apart ("JAX internal error") and
left out of the class agreement, since plax should raise the documented class
there, not copy the accident.

Where JAX's answer is not defined, plax's is checked against a definition instead:
integer division by zero against JAX's definition (XLA's -1, all ones unsigned, with
JAX's floor correction) and remainder by zero against NumPy's (0; XLA gives the
dividend), integer powers with negative exponents against the exact power truncated
toward zero (NumPy refuses them; JAX returns wrapped bits), `take` along an empty
axis against NumPy's result (JAX returns the operand itself, of another shape),
`nonzero`/`flatnonzero` of an empty array with a `fill_value` against the fill
values (JAX gives zeros there, against its documentation and its answer for a
non-empty array without nonzeros), the ends of `geomspace` against its arguments
(NumPy's; JAX rounds 10**log10 of them in the requested dtype), a median, percentile
or quantile over an empty axis against NaN (NumPy's median; JAX fails to gather),
integers rounded to tens (negative `decimals`: JAX raises NotImplementedError) and
`pad` of an empty array (JAX's linear ramp fails to slice) against NumPy's, calls
that JAX answers only by skipping its own check (an eager `lax.slice` out of bounds,
`lax.broadcast_in_dim` without broadcast dimensions, `jnp.array` of a masked array,
a static integer into an empty axis beside an array index) against the exception it
raises for them elsewhere, and an unstable sort's ties by the values they order
rather than the indices.
"""
from __future__ import annotations

import base64
import collections
import json
import os
import queue
import subprocess
import sys
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

import fuzz_worker

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_worker.py")

# Exception classes that only a bug raises (a user's bad input never should).
INTERNAL_CLASSES = {"AssertionError", "AttributeError", "KeyError", "NameError",
                    "UnboundLocalError", "ZeroDivisionError", "RecursionError",
                    "SystemError", "StopIteration", "UnicodeDecodeError", "MemoryError"}
# What builtins say when the library zips lists of unequal lengths (jaxlib's
# safe_map/safe_zip, zip(strict=True)).
_LENGTH_CHECKS = ("safe_map() argument", "safe_zip() argument", "zip() argument")

# How JAX reports a module that fails MLIR's verifier (a ValueError it raises itself).
_VERIFIER_ERROR = "Cannot lower jaxpr with verifier errors"

INTERNAL_RULE = ("internal error = a class only bugs raise (" + ", ".join(sorted(
    INTERNAL_CLASSES)) + ") unless a `raise` statement of the library raised it; or, "
    "raised in the library's code but not by a `raise` statement, an IndexError (a "
    "failed subscript) or a builtin length check of zip/safe_map; or an MLIR verifier "
    "error. One rule for plax (a failure) and JAX (counted apart)")


def is_internal(outcome: dict) -> bool:
    """Whether an exception came from a bug rather than a deliberate check of the
    input (`INTERNAL_RULE`); the same rule judges plax and JAX."""
    implicit = outcome.get("origin") == "implicit"
    if outcome["exc"] in INTERNAL_CLASSES:
        return implicit or not outcome.get("in_library")
    if not outcome.get("in_library"):
        return False
    return ((outcome["exc"] == "IndexError" and implicit)
            or outcome["exc"] == "MLIRError" or "/jaxlib/mlir/" in outcome["where"]
            or outcome["msg"].startswith(_VERIFIER_ERROR)
            or (implicit and outcome["msg"].startswith(_LENGTH_CHECKS)))

# The outcome categories, in report order.
SAME_VALUE = "same value"
SAME_EXCEPTION = "same exception class"
DIFFERENT_CLASS = "different exception class"
JAX_INTERNAL = "JAX internal error"
PLAX_RAISED = "plax raised, JAX returned"
JAX_RAISED = "JAX raised, plax returned"
VALUES_DIFFER = "values differ"
WEAK_TYPE_DIFFERS = "weak type differs"
INTERNAL = "internal error"
CRASH = "crash"
HANG = "hang"
MISSING = "missing in plax"
JAX_FAILED = "JAX crashed or hung"
BAD_CASE = "case not buildable"
CATEGORIES = [SAME_VALUE, SAME_EXCEPTION, DIFFERENT_CLASS, JAX_INTERNAL, PLAX_RAISED,
              JAX_RAISED,
              VALUES_DIFFER, WEAK_TYPE_DIFFERS, INTERNAL, CRASH, HANG, MISSING, JAX_FAILED,
              BAD_CASE]
# The categories that fail a run: plax misbehaved, whatever JAX did.
FAILING = (CRASH, HANG, INTERNAL, VALUES_DIFFER)


class Worker:
    """One library's worker process: `run(case)` → outcome dict, or a crash/hang."""

    def __init__(self, library: str, timeout: float = 120.0):
        self.library = library
        self.timeout = timeout
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue = queue.Queue()

    def _start(self) -> None:
        env = dict(os.environ)
        env.setdefault("JAX_PLATFORMS", "cpu")
        env.setdefault("PLAX_PLATFORMS", "cpu")
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        # Two CPU devices: cases run on the first unless they place arrays (donation
        # of an array split over both).
        env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        self._proc = subprocess.Popen(
            [sys.executable, WORKER, self.library], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env)
        self._lines = queue.Queue()
        threading.Thread(target=self._read, args=(self._proc, self._lines), daemon=True).start()
        ready = self._next_line(timeout=300)
        if ready is None or "ready" not in ready:
            raise RuntimeError(f"the {self.library} fuzz worker did not start")

    @staticmethod
    def _read(proc: subprocess.Popen, lines: queue.Queue) -> None:
        for line in proc.stdout:
            if line.startswith(fuzz_worker.OUT_PREFIX):
                lines.put(line[len(fuzz_worker.OUT_PREFIX):])
        lines.put(None)  # end of output: the process died

    def _next_line(self, timeout: float) -> dict | None:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return {"hang": True}
        return None if line is None else json.loads(line)

    def send(self, case: dict) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        try:
            self._proc.stdin.write(json.dumps(case) + "\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # the answer will say it crashed

    def receive(self) -> dict:
        outcome = self._next_line(self.timeout)
        if outcome is None or "hang" in outcome:
            returncode = self._stop()
            return {"hang": True} if outcome else {"crash": returncode}
        return outcome

    def _stop(self):
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.kill()
        return proc.wait()

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._stop()
        self._proc = None


def run_both(plax_worker: Worker, jax_worker: Worker, case: dict) -> tuple[dict, dict]:
    """The two outcomes of `case` (the workers run it concurrently)."""
    plax_worker.send(case)
    jax_worker.send(case)
    return plax_worker.receive(), jax_worker.receive()


# --- comparing outcomes ----------------------------------------------------------------

_TOLERANCES = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 2e-5, "complex64": 2e-5,
               "float64": 1e-12, "complex128": 1e-12}


def _leaf_array(leaf: dict) -> np.ndarray:
    dtype = fuzz_worker._np_dtype(leaf["arr"])
    return np.frombuffer(base64.b64decode(leaf["data"]), dtype).reshape(leaf["shape"])


def _compare_values(mine, theirs) -> str | None:
    """None when equal; else `VALUES_DIFFER` or `WEAK_TYPE_DIFFERS` with a reason."""
    if set(mine) != set(theirs):
        return f"{VALUES_DIFFER}: {_short(mine)} vs {_short(theirs)}"
    if "seq" in mine:
        if len(mine["seq"]) != len(theirs["seq"]):
            return f"{VALUES_DIFFER}: {len(mine['seq'])} outputs vs {len(theirs['seq'])}"
        for a, b in zip(mine["seq"], theirs["seq"]):
            diff = _compare_values(a, b)
            if diff:
                return diff
        return None
    if "map" in mine:
        if mine["map"].keys() != theirs["map"].keys():
            return f"{VALUES_DIFFER}: keys {sorted(mine['map'])} vs {sorted(theirs['map'])}"
        for k in mine["map"]:
            diff = _compare_values(mine["map"][k], theirs["map"][k])
            if diff:
                return diff
        return None
    if "arr" in mine:
        if (mine["arr"], mine["shape"]) != (theirs["arr"], theirs["shape"]):
            return (f"{VALUES_DIFFER}: {mine['arr']}{mine['shape']} vs "
                    f"{theirs['arr']}{theirs['shape']}")
        if mine["arr"] != "float0":
            a, b = _leaf_array(mine), _leaf_array(theirs)
            tol = _TOLERANCES.get(mine["arr"])
            if tol is None:  # integers and bools exactly; float8s too, any NaN alike
                equal = (np.array_equal(a, b) if a.dtype.kind in "biu" else np.array_equal(
                    a.astype(np.float64), b.astype(np.float64), equal_nan=True))
            else:
                a64, b64 = a.astype(np.complex128), b.astype(np.complex128)
                equal = (np.array_equal(np.isnan(a64), np.isnan(b64))
                         and np.allclose(a64, b64, rtol=tol, atol=tol, equal_nan=True))
            if not equal:
                return f"{VALUES_DIFFER}: {a.ravel()[:6]} vs {b.ravel()[:6]}"
        if mine["weak"] != theirs["weak"]:
            return f"{WEAK_TYPE_DIFFERS}: plax weak={mine['weak']}, JAX weak={theirs['weak']}"
        return None
    if "py" in mine:
        same = (mine["py"] == theirs["py"] and (
            mine["repr"] == theirs["repr"] or _close_reprs(mine["repr"], theirs["repr"])))
        return None if same else f"{VALUES_DIFFER}: {mine['repr']} vs {theirs['repr']}"
    if mine != theirs:
        return f"{VALUES_DIFFER}: {_short(mine)} vs {_short(theirs)}"
    return None


def _close_reprs(a: str, b: str) -> bool:
    try:
        x, y = complex(a), complex(b)
    except ValueError:
        return False
    return bool(np.isclose(x, y, rtol=2e-5, atol=2e-5, equal_nan=True))


def _short(outcome) -> str:
    text = json.dumps(outcome)
    return text if len(text) < 160 else text[:157] + "..."


def _floor_divide_as_jax(x, y, kind: str) -> np.ndarray:
    """Integer floor division of `kind` ("i" or "u") as JAX defines it by zero: XLA's
    quotient (-1; all ones unsigned), less one where a signed dividend is nonzero
    (JAX's floor correction: the signs differ and the remainder, the dividend, is not
    zero). Elsewhere NumPy's."""
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    quotient = np.floor_divide(x, np.where(y == 0, 1, y)).astype(np.int64)
    by_zero = np.where((kind == "u") | (x == 0), -1, -2)
    return np.where(y == 0, by_zero, quotient)


# references for integer division by zero, given (x, y, result kind): the quotient as
# JAX computes it (floor_divide of integers follows JAX since the bit-for-bit work),
# remainders as NumPy's 0 (JAX returns the dividend or wrapped bits)
_INT_DIVISION = {
    "jnp.floor_divide": _floor_divide_as_jax, "op://": _floor_divide_as_jax,
    "jnp.remainder": lambda x, y, kind: np.remainder(x, y),
    "jnp.mod": lambda x, y, kind: np.mod(x, y), "jnp.fmod": lambda x, y, kind: np.fmod(x, y),
    "op:%": lambda x, y, kind: np.remainder(x, y),
    "jnp.divmod": lambda x, y, kind: (_floor_divide_as_jax(x, y, kind), np.remainder(x, y))}


def _host_args(case: dict) -> list:
    return [fuzz_worker.host_array(*a[next(iter(a))])
            if isinstance(a, dict) and next(iter(a)) in ("A", "N") else a
            for a in case["args"]]


def _encoded(value: np.ndarray, like: dict) -> dict:
    data = base64.b64encode(np.ascontiguousarray(value).tobytes()).decode()
    return dict(like, data=data)


def _integer_power(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """`x ** n` for integers: wrapped for n >= 0; for n < 0 the exact power truncated
    toward zero (1 for x = 1, ±1 for x = -1, else 0)."""
    x, n = np.broadcast_arrays(np.asarray(x, np.int64), np.asarray(n, np.int64))
    out = np.empty(x.shape, object)
    for index in np.ndindex(x.shape):
        b, e = int(x[index]), int(n[index])
        out[index] = b ** e if e >= 0 else (1 if b == 1 else (-1) ** e if b == -1 else 0)
    return out


def _power_args(case: dict):
    """(base, exponent) of an integer power case, or None."""
    if case["op"] in ("jnp.power", "op:**"):
        args = _host_args(case)
    elif case["op"] == "T:jit" and case["args"][0] == {"F": "power_n"}:
        args = _host_args(dict(case, args=case["args"][2:]))
    else:
        return None
    return args if len(args) == 2 else None


def _take_from_empty_axis(case: dict, theirs: dict) -> dict | None:
    """NumPy's `take` where the axis taken from is empty, as an outcome; else None."""
    if case["op"] != "jnp.take" or "arr" not in theirs["value"] or len(case["args"]) != 2:
        return None
    x, indices = _host_args(case)
    axis = case["kwargs"].get("axis")
    x, axis = (x.ravel(), 0) if axis is None else (x, axis)
    if not isinstance(axis, int) or not -x.ndim <= axis < x.ndim or x.shape[axis] != 0 \
            or indices.size != 0:
        return None
    expected = np.take(x, indices, axis=axis)
    return {"value": _encoded(expected, dict(theirs["value"], shape=list(expected.shape)))}


def _geomspace_ends(case: dict, theirs: dict) -> dict | None:
    """JAX's `geomspace` of two real numbers of one sign with its ends set to them, as
    NumPy's, as an outcome; else None. (JAX computes an end as 10**log10(end) in the
    requested dtype: a float8_e4m3fn 3.5 comes out 3.75.)"""
    if case["op"] != "jnp.geomspace" or "arr" not in theirs["value"] \
            or len(case["args"]) != 3 or set(case["kwargs"]) - {"dtype", "endpoint"}:
        return None
    start, stop, _ = case["args"]
    values = _leaf_array(theirs["value"]).copy()
    if not all(type(v) in (int, float) for v in (start, stop)) or start * stop <= 0 \
            or values.ndim != 1 or not values.size or values.dtype.kind == "c" \
            or np.isnan(values.astype(np.float64)).any():
        return None
    values[0] = start
    if case["kwargs"].get("endpoint", True) and values.size > 1:
        values[-1] = stop
    return {"value": _encoded(values, theirs["value"])}


def _nonzero_of_empty(case: dict, theirs: dict) -> dict | None:
    """The fill values of `nonzero(empty, size=n, fill_value=v)`, as an outcome; else
    None. Their dtype is JAX's for a non-empty array: int32, or float32 (weak) for a
    Python float."""
    fill = case["kwargs"].get("fill_value")
    if case["op"] not in ("jnp.nonzero", "jnp.flatnonzero") or fill is None \
            or not isinstance(fill, (int, float)) or _host_args(case)[0].size != 0:
        return None
    value = theirs["value"]
    leaves = value["seq"] if "seq" in value else [value]
    if not all("arr" in leaf for leaf in leaves):
        return None
    dtype, weak = (np.float32, True) if isinstance(fill, float) else (np.int32, False)
    encoded = [_encoded(np.full(leaf["shape"], fill, dtype), dict(
        leaf, arr=np.dtype(dtype).name, weak=weak)) for leaf in leaves]
    return {"value": {"seq": encoded} if "seq" in value else encoded[0]}


def _scalar_boolean_index(case: dict, theirs: dict) -> dict | None:
    """NumPy's `x[index]` for an index of None, ints and a scalar boolean, as an
    outcome; else None. (A scalar `True` adds an axis of length 1 and keeps the rest:
    NumPy gives `arange(3)[None, True]` the shape (1, 1, 3), JAX 0.10.2 (1, 1, 1).)"""
    if case["op"] not in ("at:get", "op:getitem") or "arr" not in theirs["value"] \
            or len(case["args"]) != 2 or case["kwargs"]:
        return None
    index = case["args"][1]
    entries = index["T"] if isinstance(index, dict) and "T" in index else [index]
    if not any(type(e) is bool for e in entries) or not all(
            e is None or type(e) in (bool, int) for e in entries):
        return None
    x = _host_args(case)[0]
    try:
        expected = x[tuple(entries)]
    except IndexError:
        return None
    return {"value": _encoded(expected, dict(theirs["value"], shape=list(expected.shape)))}


# NumPy's NaN-skipping forms: the same answers without NaNs, and defined (NaN) on an
# empty axis, where np.percentile and np.quantile fail to index.
_EMPTY_STATISTICS = {"jnp.median": np.nanmedian, "jnp.nanmedian": np.nanmedian,
                     "jnp.percentile": np.nanpercentile,
                     "jnp.nanpercentile": np.nanpercentile, "jnp.quantile": np.nanquantile}


def _statistics_of_empty(case: dict, theirs: dict) -> dict | None:
    """NaNs for a median, percentile or quantile over an empty axis (NumPy's median
    answer; JAX fails to gather there), as an outcome; else None."""
    numpy_op = _EMPTY_STATISTICS.get(case["op"])
    if numpy_op is None or "exc" not in theirs or set(case["kwargs"]) - {"axis"}:
        return None
    x, *q = _host_args(case)
    if any(isinstance(v, (dict, list)) for v in q):
        return None  # a tuple or list of quantiles: JAX's TypeError (q must be array-like)
    if x.size or x.dtype.kind not in "biuf" or any(np.ndim(v) > 1 for v in q):
        return None
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = np.asarray(numpy_op(x, *q, axis=case["kwargs"].get("axis")))
        except (ValueError, TypeError, IndexError, np.exceptions.AxisError):
            return None  # a bad call (q out of range, a bad axis): JAX's exception stands
    dtype = "float16" if x.dtype == np.float16 else "float32"
    like = {"arr": dtype, "shape": list(expected.shape), "weak": False}
    return {"value": _encoded(expected.astype(dtype), like)}


def _refused(exc: str, why: str) -> dict:
    """An outcome: `exc` raised by a check of the library, for the reason `why`."""
    return {"exc": exc, "mro": [exc, "Exception"], "msg": f"(reference) {why}",
            "where": "", "origin": "raise", "in_library": True}


def _skipped_check(case: dict, theirs: dict) -> dict | None:
    """The exception JAX raises for a call in one form, where it answers another form
    without that check (an answer of another shape than asked, or without data it
    was given), as an outcome; else None. `lax.slice` out of bounds: eagerly JAX
    slices with a dynamic_slice, which moves the start back inside; its jit raises
    TypeError. `lax.broadcast_in_dim` of an operand of the target's rank without
    broadcast dimensions: JAX returns the operand as it is; its shape rule, run for
    any other rank, raises TypeError. `jnp.array` of a NumPy masked array: JAX drops
    the mask; its `asarray` and other functions raise ValueError."""
    args = case["args"]
    if case["op"] == "jnp.array" and args and isinstance(args[0], dict) and "M" in args[0]:
        return _refused("ValueError", "a masked array would lose its mask")
    if case["op"] not in ("lax.slice", "lax.broadcast_in_dim") or len(args) != 3 \
            or case["kwargs"].get("strides") is not None:
        return None
    shape = _host_args(case)[0].shape
    first, second = (a["T"] if isinstance(a, dict) and "T" in a else None for a in args[1:])
    if first is None or second is None:
        return None
    if case["op"] == "lax.slice":
        inside = len(first) == len(second) == len(shape) and all(
            0 <= lo <= hi <= n for lo, hi, n in zip(first, second, shape))
        if case["mode"] == "eager" and not inside:
            return _refused("TypeError", "slice bounds outside the operand")
    elif not second and len(first) == len(shape) > 0:
        return _refused("TypeError", "no broadcast dimension for an operand dimension")
    return None


def _integer_round(case: dict, theirs: dict) -> dict | None:
    """NumPy's rounding of integers to tens, hundreds... (negative `decimals`, where JAX
    raises NotImplementedError), wrapped into their dtype, as an outcome; else None."""
    if case["op"] not in ("method:round", "jnp.round", "jnp.around") \
            or theirs.get("exc") != "NotImplementedError":
        return None
    x, *rest = _host_args(case)
    decimals = rest[0] if rest else case["kwargs"].get("decimals", 0)
    if x.dtype.kind not in "iu" or type(decimals) is not int or decimals >= 0:
        return None
    expected = np.round(x.astype(np.int64), decimals).astype(x.dtype)  # exact in float64
    like = {"arr": x.dtype.name, "shape": list(x.shape), "weak": False}
    return {"value": _encoded(expected, like)}


def _pad_of_empty(case: dict, theirs: dict) -> dict | None:
    """NumPy's `pad` of an empty array where JAX raises (its linear ramp slices an edge
    element that an empty axis lacks), as an outcome: its value, or the class of its
    refusal (a ValueError: it cannot extend an empty axis); else None."""
    if case["op"] != "jnp.pad" or case["kwargs"].get("mode") != "linear_ramp" \
            or "exc" not in theirs or _host_args(case)[0].size:
        return None
    x = _host_args(case)[0]
    try:  # widths and options are plain values ("T" tuples, strings, numbers)
        args = [fuzz_worker.decode(a, None, []) for a in case["args"][1:]]
        kwargs = {k: fuzz_worker.decode(v, None, []) for k, v in case["kwargs"].items()}
    except Exception:  # noqa: BLE001 - an array option: not compared
        return None
    try:
        expected = np.pad(x, *args, **kwargs)
    except Exception as err:  # noqa: BLE001 - NumPy's refusal is the reference
        return _refused(type(err).__name__, str(err))
    return {"value": _encoded(expected, {"arr": x.dtype.name, "shape": list(expected.shape),
                                         "weak": False})}


def _static_index_into_empty_axis(case: dict, theirs: dict) -> dict | None:
    """NumPy's IndexError (and JAX's, for basic indexing) for a static integer into an
    empty axis, where an array index beside it makes JAX fail to build its gather (a
    TypeError) or answer an empty array, as an outcome; else None. Axes are counted
    over the leading integers, slices and integer arrays or lists (one axis each)."""
    if case["op"] not in ("op:getitem", "at:get") or len(case["args"]) != 2 \
            or case["kwargs"] or theirs.get("exc", "TypeError") != "TypeError":
        return None
    shape = _host_args(case)[0].shape
    index = case["args"][1]
    entries = index["T"] if isinstance(index, dict) and "T" in index else [index]
    for axis, entry in enumerate(entries[:len(shape)]):
        if type(entry) is int and shape[axis] == 0:
            return _refused("IndexError", f"index {entry} into the empty axis {axis}")
        one_axis = type(entry) is int or (isinstance(entry, list) and all(
            type(e) is int for e in entry)) or (isinstance(entry, dict) and set(entry) & {
                "S", "A", "N"})
        if not one_axis:
            return None  # an Ellipsis, None or mask: the axes after it are not counted
    return None


def numpy_reference(case: dict, theirs: dict) -> dict:
    """JAX's outcome, with the answers JAX leaves undefined replaced (see above)."""
    for reference in (_statistics_of_empty, _integer_round, _pad_of_empty,
                      _static_index_into_empty_axis):
        outcome = reference(case, theirs)
        if outcome is not None:
            return outcome
    if "value" not in theirs:
        return theirs
    skipped = _skipped_check(case, theirs)
    if skipped is not None:
        return skipped
    for reference in (_take_from_empty_axis, _nonzero_of_empty, _scalar_boolean_index,
                      _geomspace_ends):
        outcome = reference(case, theirs)
        if outcome is not None:
            return outcome
    value = theirs["value"]
    leaves = value["seq"] if "seq" in value else [value]
    if not leaves or not all("arr" in leaf and leaf["arr"] != "float0" for leaf in leaves):
        return theirs
    dtype = fuzz_worker._np_dtype(leaves[0]["arr"])
    if dtype.kind not in "iu":
        return theirs
    numpy_op, power = _INT_DIVISION.get(case["op"]), _power_args(case)
    if numpy_op is not None:
        args = _host_args(case)
        if len(args) != 2 or not np.any(np.asarray(args[1]) == 0):
            return theirs
        with np.errstate(all="ignore"):
            expected = numpy_op(*args, dtype.kind)
    elif power is not None and np.any(np.asarray(power[1]) < 0):
        bits = 8 * dtype.itemsize
        wrapped = [(int(v) + 2**(bits - 1)) % 2**bits - 2**(bits - 1) if dtype.kind == "i"
                   else int(v) % 2**bits for v in _integer_power(*power).ravel()]
        expected = np.asarray(wrapped, np.int64).reshape(np.broadcast(*power).shape)
    else:
        return theirs
    expected = expected if isinstance(expected, tuple) else (expected,)
    if len(expected) != len(leaves) or any(list(e.shape) != leaf["shape"]
                                           for e, leaf in zip(expected, leaves)):
        return theirs
    encoded = [_encoded(np.asarray(e).astype(dtype), leaf) for e, leaf in zip(expected, leaves)]
    return {"value": {"seq": encoded} if "seq" in value else encoded[0]}


def _same_sort_order(case: dict, mine: dict, theirs: dict) -> bool:
    """For an unstable argsort: the two index arrays order the input identically."""
    if case["op"] != "jnp.argsort" or case["kwargs"].get("stable", True) is not False:
        return False
    x = _host_args(case)[0]
    axis = case["kwargs"].get("axis", -1)
    if axis is None:
        x, axis = x.ravel(), 0
    try:
        a, b = _leaf_array(mine["value"]), _leaf_array(theirs["value"])
        return np.array_equal(np.take_along_axis(x, a.astype(np.int64), axis),
                              np.take_along_axis(x, b.astype(np.int64), axis))
    except (KeyError, ValueError, IndexError):
        return False


def classify(case: dict, mine: dict, theirs: dict) -> tuple[str, str]:
    """(category, detail) of plax's outcome `mine` against JAX's `theirs`."""
    if "crash" in mine:
        return CRASH, f"exit status {mine['crash']}"
    if "hang" in mine:
        return HANG, "no answer within the timeout"
    if "crash" in theirs or "hang" in theirs:
        return JAX_FAILED, _short(mine)
    if "bad_case" in mine or "bad_case" in theirs or "missing" in theirs:
        return BAD_CASE, mine.get("bad_case") or theirs.get("bad_case") or theirs["missing"]
    if "missing" in mine:
        return MISSING, mine["missing"]
    theirs = numpy_reference(case, theirs)
    if "exc" in mine:
        same = "exc" in theirs and theirs["exc"] in mine["mro"]
        # A bug class raised in a program of the case (not plax's code) is the
        # program's own error when JAX raises it too.
        if is_internal(mine) and not (same and not mine.get("in_library")):
            return INTERNAL, f"{mine['exc']}: {mine['msg'][:200]} at {mine['where']}"
        if same:
            return SAME_EXCEPTION, mine["exc"]
        if "exc" in theirs:
            category = JAX_INTERNAL if is_internal(theirs) else DIFFERENT_CLASS
            return category, (f"plax {mine['exc']} vs JAX {theirs['exc']}: "
                              f"{mine['msg'][:150]} | {theirs['msg'][:150]}"
                              + (f" at {theirs['where']}" if category == JAX_INTERNAL else ""))
        return PLAX_RAISED, f"{mine['exc']}: {mine['msg'][:200]}"
    if "exc" in theirs:
        internal = " (a JAX internal error)" if is_internal(theirs) else ""
        return JAX_RAISED, f"JAX {theirs['exc']}{internal}: {theirs['msg'][:200]}"
    diff = _compare_values(mine["value"], theirs["value"])
    if diff is None or (diff.startswith(VALUES_DIFFER) and _same_sort_order(case, mine, theirs)):
        return SAME_VALUE, ""
    category, _, detail = diff.partition(": ")
    return category, detail


# --- a run and its report -------------------------------------------------------------

@dataclass
class Report:
    """Counts per category, per family and mode, and examples of each difference."""
    counts: collections.Counter = field(default_factory=collections.Counter)
    by_family: dict = field(default_factory=lambda: collections.defaultdict(
        collections.Counter))
    examples: dict = field(default_factory=lambda: collections.defaultdict(list))

    def add(self, case: dict, category: str, detail: str) -> None:
        self.counts[category] += 1
        self.by_family[f"{case.get('family', '?')}/{case.get('mode', 'eager')}"][category] += 1
        if category not in (SAME_VALUE, SAME_EXCEPTION):
            self.examples[category].append((case, detail))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def class_agreement(self) -> float:
        """The share of runs where both raised in which plax's class is JAX's (or a
        subclass); runs where JAX's exception is an internal error are left out."""
        both = self.counts[SAME_EXCEPTION] + self.counts[DIFFERENT_CLASS]
        return 1.0 if both == 0 else self.counts[SAME_EXCEPTION] / both

    def table(self, examples: int = 3) -> str:
        lines = [f"{self.total} cases", f"{'category':<30}{'count':>8}"]
        lines += [f"{c:<30}{self.counts[c]:>8}" for c in CATEGORIES]
        lines.append(f"exception classes equal where both raised: "
                     f"{100 * self.class_agreement():.2f} % (of {self.counts[SAME_EXCEPTION]}"
                     f" + {self.counts[DIFFERENT_CLASS]}; the {self.counts[JAX_INTERNAL]} JAX "
                     f"internal errors left out)")
        lines.append(INTERNAL_RULE)
        lines.append("")
        families = sorted(self.by_family)
        short = {SAME_VALUE: "val", SAME_EXCEPTION: "exc", DIFFERENT_CLASS: "cls",
                 JAX_INTERNAL: "jaxI",
                 PLAX_RAISED: "p!", JAX_RAISED: "j!", VALUES_DIFFER: "vals",
                 WEAK_TYPE_DIFFERS: "weak", INTERNAL: "int", CRASH: "crash", HANG: "hang",
                 MISSING: "miss", JAX_FAILED: "jaxF", BAD_CASE: "bad"}
        lines.append(f"{'family/mode':<24}" + "".join(f"{short[c]:>6}" for c in CATEGORIES))
        for fam in families:
            row = self.by_family[fam]
            lines.append(f"{fam:<24}" + "".join(f"{row[c]:>6}" for c in CATEGORIES))
        for category in CATEGORIES:
            found = self.examples.get(category)
            if not found or examples == 0:
                continue
            lines.append(f"\n{category} ({len(found)}), by op and message:")
            patterns: dict = collections.defaultdict(list)  # (op, message start) → cases
            for case, detail in found:
                patterns[(case["op"], detail[:50])].append((case, detail))
            ranked = sorted(patterns.values(), key=len, reverse=True)
            for group in ranked[:examples]:
                case, detail = group[0]
                lines.append(f"  {len(group)} x {json.dumps(case)[:300]}\n      {detail[:300]}")
            if len(ranked) > examples:
                lines.append(f"  ... and {len(ranked) - examples} more patterns")
        return "\n".join(lines)
