"""Traceback filtering (`jax_traceback_filtering`): an error raised deep inside plax is
shown from the user's line, with plax's own frames removed (or hidden) by default."""
import traceback

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.errors import TracerBoolConversionError, UnfilteredStackTrace
from plax.extend import traceback_util
from plax.extend.traceback_util import is_plax_file
from plax.sharding import AxisType, NamedSharding, PartitionSpec as P


def _sharding_conflict():
    mesh = plax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    a = plax.device_put(np.ones((8, 8), np.float32), NamedSharding(mesh, P("x", "y")))
    b = plax.device_put(np.ones((8, 8), np.float32), NamedSharding(mesh, P("y", "x")))
    return plax.jit(lambda a, b: a + b)(a, b)  # USER LINE


def _jnp_shape_error():
    return jnp.add(jnp.ones(3), jnp.ones(4))  # USER LINE


def _operator_shape_error():
    return jnp.ones(3) * jnp.ones(4)  # USER LINE


def _tracer_bool():
    def f(x):
        if x > 0:  # USER LINE
            return x
        return -x
    return plax.jit(f)(1.0)


def _grad_of_jit():
    def f(x):
        return jnp.dot(x, jnp.ones(4))  # USER LINE
    return plax.grad(plax.jit(f))(jnp.ones(3))


def _scan_body_error():
    def body(carry, x):
        return carry + jnp.ones(2), x  # USER LINE: the carry's shape changes
    return plax.lax.scan(body, jnp.ones(3), jnp.ones(4))


CASES = {
    "sharding type error": (_sharding_conflict, TypeError, "ShardingTypeError"),
    "jnp shape error": (_jnp_shape_error, TypeError, "TypeError"),
    "operator shape error": (_operator_shape_error, TypeError, "TypeError"),
    "tracer bool": (_tracer_bool, TracerBoolConversionError, "TracerBoolConversionError"),
    "grad of jit": (_grad_of_jit, TypeError, "TypeError"),
    "scan body": (_scan_body_error, TypeError, "TypeError"),
}


def _raise(case):
    fn, cls, name = CASES[case]
    with pytest.raises(cls) as info:
        fn()
    assert type(info.value).__name__ == name
    return info.value


class _option:
    """Sets `jax_traceback_filtering` for a block, globally."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.old = plax.config.read("jax_traceback_filtering")
        plax.config.update("jax_traceback_filtering", self.value)

    def __exit__(self, *exc):
        plax.config.update("jax_traceback_filtering", self.old)


def _plax_frames(tb) -> list:
    return [f for f in traceback.extract_tb(tb) if is_plax_file(f.filename)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_default_shows_the_users_line_and_few_plax_frames(case):
    error = _raise(case)
    frames = traceback.extract_tb(error.__traceback__)
    assert any("USER LINE" in (f.line or "") for f in frames), frames
    assert len(_plax_frames(error.__traceback__)) <= 3, frames
    text = "".join(traceback.format_exception(error))
    assert "USER LINE" in text and "removed its internal frames" in text
    assert "JAX_TRACEBACK_FILTERING=off" in text


def test_off_keeps_every_frame():
    with _option("off"):
        error = _raise("grad of jit")
    assert len(_plax_frames(error.__traceback__)) > 3
    assert not getattr(error, "__notes__", None)


def test_remove_frames_chains_the_unfiltered_traceback():
    with _option("remove_frames"):
        error = _raise("tracer bool")
    assert len(_plax_frames(error.__traceback__)) <= 3
    cause = error.__cause__
    assert isinstance(cause, UnfilteredStackTrace)
    assert "TracerBoolConversionError" in str(cause) and "internal frames" in str(cause)
    assert len(_plax_frames(cause.__traceback__)) > 3  # the whole story, jit.py included
    text = "".join(traceback.format_exception(error))
    assert text.index("UnfilteredStackTrace") < text.rindex("TracerBoolConversionError")


def test_tracebackhide_marks_plax_frames_only():
    with _option("tracebackhide"):
        error = _raise("jnp shape error")
    hidden, shown = [], []
    tb = error.__traceback__
    while tb is not None:
        marked = tb.tb_frame.f_locals.get("__tracebackhide__", False)
        (hidden if marked else shown).append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert hidden and all(is_plax_file(f) for f in hidden)
    assert shown and not any(is_plax_file(f) for f in shown)


def test_a_library_hides_its_own_frames_under_excluded_paths(tmp_path, monkeypatch):
    """A library built on plax adds its source paths to `excluded_paths` (the `jax`
    alias's `register_exclusion`, as flax and equinox do): its frames leave the
    traceback with plax's, at its own `api_boundary` or plax's, the user's kept."""
    library = tmp_path / "mylib.py"
    library.write_text("from plax.extend.traceback_util import api_boundary\n"
                       "@api_boundary\n"
                       "def apply(f, x):\n"
                       "    return helper(f, x)\n"
                       "def helper(f, x):\n"
                       "    return f(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import mylib

    def user(x):
        raise ValueError("user error")  # USER LINE

    def files(error):
        return [f.f_code.co_filename for f, _ in traceback.walk_tb(error.__traceback__)]

    def check(excluded: bool):
        with _option("quiet_remove_frames"), pytest.raises(ValueError) as info:
            mylib.apply(plax.jit(user), 1.0)
        assert (str(library) in files(info.value)) is not excluded
        assert __file__ in files(info.value)  # the test's frames and the user's line
        assert not any(map(is_plax_file, files(info.value)))
        with _option("tracebackhide"), pytest.raises(ValueError) as info:
            mylib.apply(user, 1.0)
        frames = [f for f, _ in traceback.walk_tb(info.value.__traceback__)
                  if f.f_code.co_filename == str(library)]
        assert frames and all(traceback_util.is_kept_frame(f) is not excluded
                              for f in frames)

    check(excluded=False)
    traceback_util.excluded_paths.append(str(tmp_path))
    try:
        check(excluded=True)
    finally:
        traceback_util.excluded_paths.remove(str(tmp_path))


def test_nested_boundaries_filter_once():
    # vmap(grad(jit(f))): three boundaries, one note, the user's line kept.
    def f(x):
        return jnp.dot(x, jnp.ones(4))  # USER LINE
    with pytest.raises(TypeError) as info:
        plax.vmap(plax.grad(plax.jit(f)))(jnp.ones((2, 3)))
    notes = info.value.__notes__
    assert sum("removed its internal frames" in n for n in notes) == 1
    frames = traceback.extract_tb(info.value.__traceback__)
    assert any("USER LINE" in (fr.line or "") for fr in frames)


def test_message_and_class_are_unchanged():
    with _option("off"):
        unfiltered = _raise("jnp shape error")
    filtered = _raise("jnp shape error")
    assert type(filtered) is type(unfiltered) and filtered.args == unfiltered.args


def test_bad_mode_is_a_value_error():
    with pytest.raises(ValueError, match="jax_traceback_filtering"):
        plax.config.update("jax_traceback_filtering", "sometimes")
    assert plax.config.read("jax_traceback_filtering") == "auto"


def test_boundaries_keep_public_functions_picklable_and_introspectable():
    import inspect
    import pickle
    for fn in (jnp.add, jnp.sum, jnp.linalg.vector_norm, plax.lax.add, plax.random.normal):
        assert pickle.loads(pickle.dumps(fn)) is fn
        assert inspect.unwrap(fn).__module__ == fn.__module__ and fn.__doc__
    assert list(inspect.signature(jnp.sum).parameters)[:2] == ["a", "axis"]
