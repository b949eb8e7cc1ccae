"""Tests of plax._src.config: flags, thread-local states, env, absl."""
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from plax.extend import config as config_lib
from plax.extend.config import config


@pytest.fixture
def cfg():
    """A private registry, so tests never change the process's real options."""
    return config_lib.Config()


# --- Flags.

def test_flag_can_be_set_once(cfg):
    flag = cfg.int_flag("jax_test_count", 1, "help")
    cfg.update("jax_test_count", 2)
    assert flag.value == 2
    with pytest.raises(ValueError, match="already set"):
        cfg.update("jax_test_count", 3)
    assert cfg.jax_test_count == 2


def test_flag_cannot_be_set_after_use(cfg):
    flag = cfg.string_flag("jax_test_dir", None, "help")
    cfg.values()  # listing is not a use
    assert flag.value is None
    with pytest.raises(ValueError, match="already used"):
        cfg.update("jax_test_dir", "/tmp/x")


def test_flag_values_are_validated(cfg):
    cfg.float_flag("jax_test_secs", 1.0, "help", minimum=0.0)
    cfg.enum_flag("jax_test_mode", ["a", "b"], "a", "help")
    with pytest.raises(ValueError, match=">= 0.0"):
        cfg.update("jax_test_secs", -1)
    with pytest.raises(ValueError, match=r"one of \['a', 'b'\]"):
        cfg.update("jax_test_mode", "c")
    with pytest.raises(TypeError, match="takes a str"):
        cfg.string_flag("jax_test_name", "x", "help")._set(3)


def test_flag_reads_env_only_when_asked(cfg, monkeypatch):
    monkeypatch.setenv("PLAX_TEST_PLATFORMS", "cuda,cpu")
    monkeypatch.setenv("PLAX_TEST_OTHER", "cuda")
    assert cfg.string_flag("jax_test_platforms", None, "h", read_env=True).value == "cuda,cpu"
    assert cfg.string_flag("jax_test_other", None, "h").value is None


def test_real_flags_exist_with_jax_defaults():
    values = config.values()
    assert values["jax_num_cpu_devices"] == -1
    assert values["jax_cpu_enable_async_dispatch"] is True
    assert values["jax_persistent_cache_min_compile_time_secs"] == 1.0
    assert isinstance(config_lib.platforms, config_lib.Flag)
    assert not isinstance(config_lib.platforms, config_lib.State)


# --- Environment variables.

@pytest.mark.parametrize("text,expected", [
    *[(w, True) for w in ["y", "yes", "t", "true", "on", "1", "TRUE", "On"]],
    *[(w, False) for w in ["n", "no", "f", "false", "off", "0", "False"]],
])
def test_bool_env_words(cfg, monkeypatch, text, expected):
    monkeypatch.setenv("JAX_TEST_BOOL", text)
    state = cfg.define_bool_state("jax_test_bool", not expected, "help")
    assert state.value is expected


def test_env_plax_spelling_wins(cfg, monkeypatch):
    monkeypatch.setenv("JAX_TEST_RUNS", "4")
    monkeypatch.setenv("PLAX_TEST_RUNS", "7")
    assert cfg.define_int_state("jax_test_runs", 3, "help").value == 7
    assert config_lib.env_var_names("jax_test_runs") == ("PLAX_TEST_RUNS", "JAX_TEST_RUNS")


@pytest.mark.parametrize("define,text", [
    (lambda c: c.define_bool_state("jax_test_bad", False, "h"), "maybe"),
    (lambda c: c.define_int_state("jax_test_bad", 1, "h"), "three"),
    (lambda c: c.define_enum_state("jax_test_bad", ["allow", "raise"], "allow", "h"), "warn"),
])
def test_bad_env_value_names_the_variable(cfg, monkeypatch, define, text):
    monkeypatch.setenv("PLAX_TEST_BAD", text)
    with pytest.raises(ValueError, match="PLAX_TEST_BAD"):
        define(cfg)


def test_object_state_env_text_is_validated(cfg, monkeypatch):
    def platform_name(option, value):
        if value not in (None, "cpu"):
            raise ValueError(f"{option}: unknown platform {value!r}")

    monkeypatch.setenv("JAX_TEST_DEVICE", "cpu")
    state = cfg.define_object_state("jax_test_device", None, "h", validator=platform_name)
    assert state.value == "cpu"
    monkeypatch.setenv("JAX_TEST_DEVICE2", "abacus")
    with pytest.raises(ValueError, match="JAX_TEST_DEVICE2: unknown platform 'abacus'"):
        cfg.define_object_state("jax_test_device2", None, "h", validator=platform_name)


def test_optional_string_env_empty_means_none(cfg, monkeypatch):
    monkeypatch.setenv("JAX_TEST_PRECISION", "")
    assert cfg.define_optional_string_state("jax_test_precision", "x", "h").value is None


# --- Global updates, attribute access, aliases.

def test_update_and_aliases(cfg):
    state = cfg.define_int_state("jax_test_level", 3, "help")
    cfg.update("jax_test_level", 5)
    assert state.value == 5 and state.get_global() == 5
    cfg.update("plax_test_level", 6)
    assert cfg.jax_test_level == 6 == cfg.plax_test_level == cfg.read("plax_test_level")
    assert cfg.values() == {"jax_test_level": 6}


def test_enable_x64_readable_and_settable_through_config():
    assert config.jax_enable_x64 is False
    assert config_lib.enable_x64.value is False
    with config_lib.enable_x64(True):
        assert config.jax_enable_x64 is True and config.read("plax_enable_x64") is True
    try:
        config.update("plax_enable_x64", True)
        assert config.jax_enable_x64 is True
    finally:
        config.update("jax_enable_x64", False)
    assert config.jax_enable_x64 is False


def test_unknown_name_suggests_close_names():
    with pytest.raises(AttributeError, match="did you mean 'jax_enable_x64'"):
        config.update("jax_enabel_x64", True)
    with pytest.raises(AttributeError, match="did you mean 'jax_debug_nans'"):
        _ = config.jax_debug_nan
    with pytest.raises(AttributeError, match="did you mean 'jax_disable_jit'"):
        config.read("plax_disable_jt")
    with pytest.raises(AttributeError, match="Unrecognized config option: 'zzz'$"):
        config.update("zzz", 1)


def test_bad_values_are_rejected(cfg):
    cfg.define_bool_state("jax_test_b", False, "h")
    cfg.define_int_state("jax_test_i", 1, "h")
    with pytest.raises(ValueError, match="invalid truth value 'maybe'"):
        cfg.update("jax_test_b", "maybe")
    with pytest.raises(TypeError, match="takes a bool"):
        cfg.update("jax_test_b", 2)
    with pytest.raises(TypeError, match="takes an int"):
        cfg.update("jax_test_i", 1.5)
    with pytest.raises(ValueError, match="must be one of"):
        config.update("jax_numpy_rank_promotion", "sometimes")
    with pytest.raises(ValueError, match="jax_default_device"):
        config_lib.default_device(3.0)
    with pytest.raises(ValueError, match="already defined"):
        cfg.define_bool_state("jax_test_b", False, "h")


def test_bool_of_holder_is_an_error():
    with pytest.raises(TypeError, match="did you mean `.value`"):
        bool(config_lib.enable_x64)
    with pytest.raises(TypeError, match="did you mean `.value`"):
        bool(config_lib.platforms)


# --- Context managers and decorators.

def test_context_manager_sets_and_restores(cfg):
    state = cfg.define_enum_state("jax_test_mode", ["a", "b", "c"], "a", "help")
    with state("b"):
        assert state.value == "b" and state.get_global() == "a"
        with state("c"):
            assert state.value == "c"
        assert state.value == "b"
    assert state.value == "a" and state.get_local() is config_lib.unset
    with pytest.raises(RuntimeError):
        with state("c"):
            raise RuntimeError("boom")
    assert state.value == "a"


def test_context_manager_checks_value_and_argument(cfg):
    flag = cfg.define_bool_state("jax_test_flag", False, "help")
    mode = cfg.define_enum_state("jax_test_mode", ["a", "b"], "a", "help")
    with flag():  # bool states default to True
        assert flag.value is True
    with pytest.raises(TypeError, match="needs the new value"):
        mode()
    with pytest.raises(ValueError, match="must be one of"):
        mode("z")


def test_decorator_and_reentrant_use(cfg):
    state = cfg.define_int_state("jax_test_depth", 0, "help")
    seen = []

    @state(1)
    def f(n):
        seen.append(state.value)
        if n:
            with state(2):
                f(n - 1)
                seen.append(state.value)

    f(2)
    assert seen == [1, 1, 1, 2, 2]
    assert state.value == 0

    same = state(9)
    with same:
        with same:
            assert state.value == 9
        assert state.value == 9
    assert state.value == 0


def test_update_hook_sees_effective_values(cfg):
    seen = []
    state = cfg.define_bool_state("jax_test_hooked", False, "h", update_hook=seen.append)
    cfg.update("jax_test_hooked", True)
    with state(False):
        pass
    assert seen == [False, True, False, True]


def test_trace_and_jit_key_contexts(cfg):
    traced = cfg.define_bool_state("jax_test_traced", False, "h", include_in_trace_context=True)
    keyed = cfg.define_int_state("jax_test_keyed", 1, "h", include_in_jit_key=True)
    cfg.define_bool_state("jax_test_neither", False, "h")
    assert cfg.trace_context_names() == ("jax_test_traced",)
    assert cfg.jit_key_context_names() == ("jax_test_keyed",)
    before = cfg.trace_context()
    with traced(True), keyed(2):
        assert cfg.trace_context() == (True,) != before
        assert cfg.jit_key_context() == (2,)
    assert cfg.trace_context() == before and cfg.jit_key_context() == (1,)


def test_real_states_cache_key_membership():
    names = config.trace_context_names()
    assert "jax_enable_x64" in names and "jax_numpy_rank_promotion" in names
    assert "jax_log_compiles" not in names and "jax_platforms" not in names
    assert "jax_debug_nans" in config.jit_key_context_names()
    with config_lib.enable_x64(True):
        inside = config_lib.trace_context()
    assert inside != config_lib.trace_context()


# --- Threads.

def test_thread_local_values_are_not_shared(cfg):
    state = cfg.define_int_state("jax_test_threads", 0, "help")
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def setter():
        with state(1):
            seen["setter inside"] = state.value
            entered.set()
            release.wait(10)
        seen["setter after"] = state.value

    def reader():
        seen["reader"] = state.value

    t = threading.Thread(target=setter)
    t.start()
    assert entered.wait(10)
    assert state.value == 0  # the main thread does not see the setter's local value
    r = threading.Thread(target=reader)
    r.start()
    r.join(10)
    release.set()
    t.join(10)
    assert seen == {"setter inside": 1, "setter after": 0, "reader": 0}


def test_global_value_is_seen_by_threads_without_local_value(cfg):
    state = cfg.define_int_state("jax_test_global", 0, "help")
    seen = []
    with state(5):  # main thread's local value does not leak into the new thread
        cfg.update("jax_test_global", 7)
        t = threading.Thread(target=lambda: seen.append(state.value))
        t.start()
        t.join(10)
        assert state.value == 5
    assert seen == [7] and state.value == 7


# --- absl.

def _run_python(code: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for var in ("PLAX_ENABLE_X64", "JAX_ENABLE_X64", "PLAX_PGLE_PROFILING_RUNS",
                "JAX_PGLE_PROFILING_RUNS", "PLAX_PLATFORMS", "JAX_PLATFORMS"):
        env.pop(var, None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_absl_flags_apply_after_parsing():
    pytest.importorskip("absl")
    out = _run_python("""
        from absl import app
        from plax._src.config import config
        config.config_with_absl()

        def main(argv):
            print(config.jax_enable_x64, config.jax_pgle_profiling_runs,
                  config.jax_platforms, config.jax_default_prng_impl)

        app.run(main)
    """, "--plax_enable_x64", "--plax_pgle_profiling_runs=5", "--plax_platforms=cpu")
    assert out == "True 5 cpu threefry2x32"


def test_absl_jax_spelled_flag_defined_by_jax_is_shared():
    pytest.importorskip("absl")
    out = _run_python("""
        from absl import app, flags
        flags.DEFINE_bool("jax_enable_x64", False, "as JAX itself defines it")
        from plax._src.config import config
        config.config_with_absl()

        def main(argv):
            print(config.jax_enable_x64)

        app.run(main)
    """, "--jax_enable_x64")
    assert out == "True"


def test_absl_used_automatically_when_already_imported():
    pytest.importorskip("absl")
    out = _run_python("""
        import absl.flags
        from absl import app
        from plax._src.config import config
        later = config.define_int_state("jax_test_later", 1, "defined after absl")

        def main(argv):
            print(config.jax_debug_nans, later.value)

        app.run(main)
    """, "--plax_debug_nans=true", "--plax_test_later=4")
    assert out == "True 4"


def test_parse_flags_with_absl_applies_only_our_flags(monkeypatch):
    """JAX's `parse_flags_with_absl` (test programs call it before main): the
    `--plax_...` flags of the command line are applied, other arguments ignored."""
    pytest.importorskip("absl")
    import sys

    import plax
    monkeypatch.setattr(sys, "argv", ["prog", "--plax_debug_nans", "--unrelated=1", "--",
                                      "--plax_debug_infs"])
    before = plax.config.read("jax_debug_nans"), plax.config.read("jax_debug_infs")
    try:
        plax.config.parse_flags_with_absl()
        assert plax.config.read("jax_debug_nans") is True
        assert plax.config.read("jax_debug_infs") is before[1]  # after `--`: not ours
    finally:
        plax.config.update("jax_debug_nans", before[0])


def test_effect_subclass_without_a_name():
    from plax.extend.core import Effect

    class LibraryEffect(Effect):
        pass
    assert repr(LibraryEffect()) == "LibraryEffect" and not LibraryEffect().ordered
    assert repr(Effect("io", ordered=True)) == "io"
