"""The fuzzer's own rules, on hand-made outcomes: what counts as an internal error
(the same rule for plax and JAX) and how a pair of outcomes is classified."""
from __future__ import annotations

import numpy as np

import fuzz_runner
from fuzz_runner import classify, is_internal


def exc(name, origin="raise", in_library=True, msg="", where="lib.py:1", mro=None):
    return {"exc": name, "mro": mro or [name, "Exception"], "msg": msg, "where": where,
            "origin": origin, "in_library": in_library}


CASE = {"op": "jnp.hstack", "args": [], "kwargs": {}}


def test_bug_classes_are_internal_unless_a_raise_statement_of_the_library_raised_them():
    assert is_internal(exc("ZeroDivisionError", origin="implicit"))
    assert is_internal(exc("AssertionError", origin="implicit"))  # an `assert`
    assert is_internal(exc("AttributeError", in_library=False))  # None passed to user code
    assert not is_internal(exc("ZeroDivisionError"))  # NumPy's class, raised on purpose
    assert not is_internal(exc("KeyError"))


def test_documented_classes_are_internal_only_when_raised_by_accident():
    assert is_internal(exc("IndexError", origin="implicit"))  # a failed subscript
    assert not is_internal(exc("IndexError"))
    assert not is_internal(exc("IndexError", origin="implicit", in_library=False))
    assert is_internal(exc("ValueError", origin="implicit",
                           msg="safe_map() argument 2 is shorter than argument 1"))
    assert not is_internal(exc("ValueError", msg="safe_map() argument 2 is shorter"))
    assert is_internal(exc("MLIRError", where="/x/jaxlib/mlir/dialects/ops.py:3"))
    assert is_internal(exc("ValueError", msg="Cannot lower jaxpr with verifier errors:\n"))
    assert not is_internal(exc("TypeError", origin="implicit", msg="'float' object cannot "
                               "be interpreted as an integer"))


def test_jax_internal_errors_are_counted_apart_and_plax_ones_fail():
    plax_value_error = exc("ValueError", mro=["ValueError", "Exception"])
    jax_index_error = exc("IndexError", origin="implicit")
    assert classify(CASE, plax_value_error, jax_index_error)[0] == fuzz_runner.JAX_INTERNAL
    assert classify(CASE, jax_index_error, plax_value_error)[0] == fuzz_runner.INTERNAL
    # The same accident on both sides is still plax's failure.
    assert classify(CASE, jax_index_error, jax_index_error)[0] == fuzz_runner.INTERNAL
    # A bug class raised in the case's own program by both is the program's error.
    user = exc("AttributeError", in_library=False, mro=["AttributeError", "Exception"])
    assert classify(CASE, user, user)[0] == fuzz_runner.SAME_EXCEPTION
    assert classify(CASE, plax_value_error, exc("TypeError"))[0] == \
        fuzz_runner.DIFFERENT_CLASS
    assert classify(CASE, {"value": {"none": True}}, jax_index_error)[0] == \
        fuzz_runner.JAX_RAISED


def test_jax_internal_errors_are_left_out_of_the_class_agreement():
    report = fuzz_runner.Report()
    for category in [fuzz_runner.SAME_EXCEPTION] * 3 + [fuzz_runner.DIFFERENT_CLASS] + [
            fuzz_runner.JAX_INTERNAL] * 5:
        report.add(CASE, category, "")
    assert report.class_agreement() == 0.75
    assert fuzz_runner.INTERNAL_RULE in report.table()


def test_a_scalar_boolean_index_is_checked_against_numpy():
    """JAX 0.10.2 gives `arange(3)[None, True]` the shape (1, 1, 1); NumPy (1, 1, 3)."""
    import base64

    import fuzz_worker
    case = {"op": "at:get", "args": [{"A": [[3], "int8", "normal", 13]}, {"T": [None, True]}],
            "kwargs": {}, "mode": "jit"}
    x = fuzz_worker.host_array([3], "int8", "normal", 13)
    jaxs = {"arr": "int8", "shape": [1, 1, 1], "weak": False,
            "data": base64.b64encode(x[:1].tobytes()).decode()}
    reference = fuzz_runner.numpy_reference(case, {"value": jaxs})["value"]
    assert reference["shape"] == [1, 1, 3]
    assert base64.b64decode(reference["data"]) == x.tobytes()
    other = dict(case, args=[case["args"][0], {"T": [None, 1]}])  # no boolean: JAX's answer
    assert fuzz_runner.numpy_reference(other, {"value": jaxs})["value"] is jaxs


def test_calls_jax_answers_by_skipping_its_checks_are_checked_against_its_exception():
    """JAX 0.10.2 answers an eager `lax.slice(x, (4,), (5,))` of 4 elements with x[3:4]
    (its jit raises TypeError) and `lax.broadcast_in_dim(x, (3, 1, 2), ())` of a rank-3
    x with x itself; plax raises TypeError: the same class as the reference."""
    value = {"value": {"none": True}}
    slice_case = {"op": "lax.slice", "args": [{"A": [[4], "bool", "pos", 1]}, {"T": [4]},
                                              {"T": [5]}], "kwargs": {}, "mode": "eager"}
    plax_type_error = exc("TypeError", mro=["TypeError", "Exception"])
    assert classify(slice_case, plax_type_error, value)[0] == fuzz_runner.SAME_EXCEPTION
    inside = dict(slice_case, args=[slice_case["args"][0], {"T": [1]}, {"T": [3]}])
    assert classify(inside, plax_type_error, value)[0] == fuzz_runner.PLAX_RAISED
    assert classify(dict(slice_case, mode="jit"), plax_type_error, value)[0] == \
        fuzz_runner.PLAX_RAISED  # JAX's jit checks: its answer stands
    broadcast = {"op": "lax.broadcast_in_dim", "args": [
        {"A": [[1, 1, 3], "uint8", "normal", 2]}, {"T": [3, 1, 2]}, {"T": []}],
        "kwargs": {}, "mode": "jit"}
    assert classify(broadcast, plax_type_error, value)[0] == fuzz_runner.SAME_EXCEPTION
    masked = {"op": "jnp.array", "args": [{"M": [[2], "float32", "normal", 3]}],
              "kwargs": {}, "mode": "eager"}
    plax_value_error = exc("ValueError", mro=["ValueError", "Exception"])
    assert classify(masked, plax_value_error, value)[0] == fuzz_runner.SAME_EXCEPTION


def test_a_tuple_of_quantiles_of_an_empty_array_keeps_jax_exception():
    case = {"op": "jnp.nanpercentile", "args": [{"A": [[0], "int32", "special", 9]},
                                                {"T": [0.25, 0.75]}], "kwargs": {"axis": 0},
            "mode": "jit"}
    jax_type_error = exc("TypeError")
    assert fuzz_runner.numpy_reference(case, jax_type_error) is jax_type_error


def test_integers_rounded_to_tens_are_checked_against_numpy():
    """JAX 0.10.2 raises NotImplementedError; NumPy rounds (ties to even), wrapped."""
    import base64
    case = {"op": "method:round", "args": [{"N": [[3], "int8", "normal", 4]}, -1],
            "kwargs": {}, "mode": "jit"}
    x = fuzz_runner._host_args(case)[0]
    reference = fuzz_runner.numpy_reference(case, exc("NotImplementedError"))["value"]
    got = np.frombuffer(base64.b64decode(reference["data"]), np.int8)
    np.testing.assert_array_equal(got, np.round(x.astype(np.int64), -1).astype(np.int8))
    assert fuzz_runner.numpy_reference(dict(case, args=[case["args"][0], 1]),
                                       exc("NotImplementedError"))["exc"] == \
        "NotImplementedError"


def test_pad_of_an_empty_array_is_checked_against_numpy():
    """JAX 0.10.2's linear ramp raises TypeError for an empty array; NumPy pads it."""
    case = {"op": "jnp.pad", "args": [{"A": [[0], "uint8", "normal", 6]}, {"T": [0, 0]}],
            "kwargs": {"mode": "linear_ramp"}, "mode": "jit"}
    reference = fuzz_runner.numpy_reference(case, exc("TypeError"))["value"]
    assert reference["shape"] == [0] and reference["arr"] == "uint8"
    wider = dict(case, args=[case["args"][0], {"T": [0, 2]}])  # NumPy cannot extend it
    assert fuzz_runner.numpy_reference(wider, exc("TypeError"))["exc"] == "ValueError"


def test_a_static_integer_into_an_empty_axis_is_numpy_s_index_error():
    """JAX 0.10.2 fails to build a gather for `x[-1, array]` of an empty axis 0 (a
    TypeError); NumPy, and JAX's basic indexing, raise IndexError."""
    x = {"A": [[0, 0], "int32", "zeros", 604]}
    case = {"op": "op:getitem", "args": [x, {"T": [-1, {"A": [[1], "int32", "normal", 13]},
                                                    {"E": 0}]}], "kwargs": {}, "mode": "eager"}
    assert fuzz_runner.numpy_reference(case, exc("TypeError"))["exc"] == "IndexError"
    later = dict(case, args=[{"A": [[3, 0], "int32", "zeros", 1]}, {"T": [
        {"A": [[1], "int32", "normal", 13]}, 0]}])  # the integer indexes the empty axis 1
    assert fuzz_runner.numpy_reference(later, exc("TypeError"))["exc"] == "IndexError"
    inside = dict(case, args=[{"A": [[0, 3], "int32", "zeros", 1]}, {"T": [
        {"A": [[1], "int32", "normal", 13]}, 1]}])  # 1 is inside axis 1: JAX's TypeError
    assert fuzz_runner.numpy_reference(inside, exc("TypeError"))["exc"] == "TypeError"


def test_the_ends_of_geomspace_are_its_arguments():
    """JAX 0.10.2 gives geomspace(2, 3.5, 2, dtype=float8_e4m3fn) as [2, 3.75]; NumPy's
    ends are the arguments."""
    import base64

    import ml_dtypes
    f8 = ml_dtypes.float8_e4m3fn
    jaxs = {"arr": "float8_e4m3fn", "shape": [2], "weak": False,
            "data": base64.b64encode(np.array([2, 3.75], f8).tobytes()).decode()}
    case = {"op": "jnp.geomspace", "args": [2, 3.5, 2], "kwargs": {"dtype": {"D": "float8_e4m3fn"}},
            "mode": "jit"}
    reference = fuzz_runner.numpy_reference(case, {"value": jaxs})["value"]
    assert np.frombuffer(base64.b64decode(reference["data"]), f8).tolist() == [2, 3.5]
    no_end = dict(case, kwargs=dict(case["kwargs"], endpoint=False))
    reference = fuzz_runner.numpy_reference(no_end, {"value": jaxs})["value"]
    assert np.frombuffer(base64.b64decode(reference["data"]), f8).tolist() == [2, 3.75]


def test_only_the_linear_ramp_of_an_empty_pad_is_replaced():
    """A bogus mode is JAX's error (NotImplementedError), not NumPy's ValueError."""
    case = {"op": "jnp.pad", "args": [{"A": [[0], "bool", "normal", 487]}, {"T": [0, 0]}],
            "kwargs": {"mode": "bogus"}, "mode": "eager"}
    jax_error = exc("NotImplementedError")
    assert fuzz_runner.numpy_reference(case, jax_error) is jax_error


def test_a_static_integer_into_an_empty_axis_after_a_list_or_where_jax_answers():
    x = {"A": [[2, 0, 0], "int32", "special", 306]}
    case = {"op": "op:getitem", "args": [x, {"T": [0, [0, 1], 0]}], "kwargs": {},
            "mode": "eager"}
    assert fuzz_runner.numpy_reference(case, exc("TypeError"))["exc"] == "IndexError"
    sliced = dict(case, args=[x, {"T": [{"A": [[2], "int32", "normal", 64]},
                                        {"S": [None, None, None]}, 0]}])
    jax_empty = {"value": {"arr": "int32", "shape": [2, 0], "weak": False, "data": ""}}
    assert fuzz_runner.numpy_reference(sliced, jax_empty)["exc"] == "IndexError"
