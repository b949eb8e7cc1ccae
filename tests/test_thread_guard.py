"""`plax.thread_guard`: computations spanning processes start from the guard's thread."""
import threading

import numpy as np
import pytest
from jaxlib import _jax

import plax
from plax_runtime import thread_guard


def _in_thread(fn):
    """Runs `fn` in another thread; returns what it raised (or None)."""
    caught = []

    def target():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            caught.append(e)
    t = threading.Thread(target=target)
    t.start()
    t.join()
    return caught[0] if caught else None


@pytest.fixture
def multi_process(monkeypatch):
    """Executables compiled while it is active count as spanning processes."""
    monkeypatch.setattr(thread_guard, "spans_processes", lambda devices: True)


def test_a_multi_process_computation_runs_only_in_the_guards_thread(multi_process):
    f = plax.jit(lambda x: x * 3.0 + 1.25)  # compiled under the fixture: "multi-process"
    x = np.arange(4.0, dtype=np.float32)
    with plax.thread_guard(True):
        np.testing.assert_allclose(f(x), x * 3 + 1.25)  # the guard's thread: fine
        for _ in range(2):  # the first call's Python path, then the cached fast path
            err = _in_thread(lambda: f(x))
            assert isinstance(err, _jax.JaxRuntimeError), err
            assert "multi-process plax operation was called from thread" in str(err)
        np.testing.assert_allclose(f(x), x * 3 + 1.25)
    assert _in_thread(lambda: f(x)) is None  # the guard is gone with its block


def test_single_process_computations_are_never_checked():
    g = plax.jit(lambda x: x - 1.0)
    with plax.thread_guard(True):
        assert _in_thread(lambda: np.asarray(g(np.ones(3, np.float32)))) is None


def test_a_second_thread_cannot_set_the_guard_while_one_holds_it():
    with plax.thread_guard(True):
        err = _in_thread(lambda: plax.thread_guard(True).__enter__())
        assert isinstance(err, _jax.JaxRuntimeError) and "Nested thread guards" in str(err)
        with plax.thread_guard(True):  # nesting in the same thread is fine
            thread_guard.check()
        thread_guard.check()  # still the owner after the inner block
    assert not plax.config.jax_thread_guard


def test_the_option_reads_as_jax_s():
    assert plax.config.read("jax_thread_guard") is False
    with plax.thread_guard():
        assert plax.config.jax_thread_guard is True
    assert thread_guard.spans_processes([plax.devices()[0]]) is False
