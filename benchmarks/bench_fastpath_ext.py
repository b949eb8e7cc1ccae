"""Cost of one jit cache-key signature: the C++ `arg_signature` against the same
function written in Python, on argument lists a jitted call typically sees.

    python3 benchmarks/bench_fastpath_ext.py

Prints nanoseconds per call for each and their ratio (one run, same machine).
"""
import timeit

import numpy as np

from plax.extend.core import ShapedArray
from plax_runtime._fastpath import arg_signature

_SCALARS = {
    float: (((), np.dtype("float32"), True), ((), np.dtype("float64"), True)),
    int: (((), np.dtype("int32"), True), ((), np.dtype("int64"), True)),
    complex: (((), np.dtype("complex64"), True), ((), np.dtype("complex128"), True)),
}
_BOOL = ((), np.dtype(bool), False)


def py_arg_signature(args, x64):
    """The Python equivalent of `_fastpath.arg_signature` (same results)."""
    out = []
    for i, x in enumerate(args):
        t = type(x)
        if t in _SCALARS:
            out.append(_SCALARS[t][x64])
        elif t is bool:
            out.append(_BOOL)
        elif (aval := getattr(x, "aval", None)) is not None:
            out.append((tuple(aval.shape), aval.dtype, bool(aval.weak_type)))
        elif hasattr(x, "shape") and hasattr(x, "dtype"):
            out.append((tuple(x.shape), x.dtype, False))
        else:
            raise TypeError(f"Argument {i} of type {t} is not a valid JAX type")
    return tuple(out)


class ArrayLike:
    """Stands for a plax Array: the fast path reads only its aval."""

    def __init__(self, shape, dtype):
        self.aval = ShapedArray(shape, dtype)


CASES = {
    "1 array": [ArrayLike((128, 128), np.float32)],
    "4 mixed (2 arrays, numpy, float)": [ArrayLike((8,), np.float32),
                                         ArrayLike((8, 8), np.float32),
                                         np.ones(3, np.int32), 0.5],
    "16 arrays": [ArrayLike((i + 1,), np.float32) for i in range(16)],
    "16 python scalars": [float(i) for i in range(16)],
}


def per_call_ns(fn, args, number=200_000):
    best = min(timeit.repeat(lambda: fn(args, False), number=number, repeat=5))
    return best / number * 1e9


def main():
    print(f"{'arguments':36s} {'C++ ns':>8s} {'Python ns':>10s} {'speed-up':>9s}")
    for name, args in CASES.items():
        assert arg_signature(args, False) == py_arg_signature(args, False)
        cpp, py = per_call_ns(arg_signature, args), per_call_ns(py_arg_signature, args)
        print(f"{name:36s} {cpp:8.0f} {py:10.0f} {py / cpp:8.1f}x")


if __name__ == "__main__":
    main()
