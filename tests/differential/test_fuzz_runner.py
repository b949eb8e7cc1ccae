"""The fuzzer's own rules, on hand-made outcomes: what counts as an internal error
(the same rule for plax and JAX) and how a pair of outcomes is classified."""
from __future__ import annotations

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
