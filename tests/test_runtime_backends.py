"""Backends: the registry, platform selection, and the device-listing API."""
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
from jaxlib import xla_client as xc

from plax_runtime import api, backends
from plax_runtime.backends import BackendPlugin, BackendUnavailableError, BackendWarning


def test_eight_cpu_devices():
    devices = api.devices()
    assert len(devices) == 8
    assert [d.id for d in devices] == list(range(8))
    assert all(d.platform == "cpu" for d in devices)
    assert api.device_count() == api.local_device_count() == 8
    assert api.local_devices() == devices
    assert api.devices("cpu") == devices


def test_process_and_default_backend():
    assert api.default_backend() == "cpu"
    assert api.process_index() == 0
    assert api.process_count() == 1
    assert api.local_devices(process_index=1) == []
    client = api.get_backend()
    assert api.get_backend("cpu") is client
    assert api.get_backend(client) is client
    assert api.devices(client) == api.devices()


def test_cpu_entry_point_is_the_cpu_backend():
    from plax.extend import registry as plugins
    from plax_runtime import cpu
    assert plugins.resolve("plax.backends", "cpu") is cpu.backend
    assert cpu.backend.platform == "cpu" and cpu.backend.package == "plax-runtime"


def test_unknown_backend_names_its_package():
    with pytest.raises(RuntimeError, match="plax-tpu"):
        api.devices("tpu")
    # JAX's openings, which libraries match (chex: "(failed to initialize)|(Unknown
    # backend)"), come first
    with pytest.raises(RuntimeError, match="^Backend 'tpu' failed to initialize: "):
        api.devices("tpu")
    with pytest.raises(RuntimeError, match="^Unknown backend 'nosuch': no plugin provides"):
        api.devices("nosuch")
    with pytest.raises(TypeError, match="platform name"):
        api.get_backend(3)


# --- make_clients with fake plugins: ordering, failures, requests.

class _FakeClient:
    def __init__(self, name):
        self.name = name


def _plugin(platform, priority=0, error=None, aliases=()):
    def make():
        if error is not None:
            raise error
        return _FakeClient(platform)
    return BackendPlugin(platform=platform, make_client=make, priority=priority,
                         package=f"plax-{platform}", aliases=aliases)


def test_priority_orders_the_default_first():
    available = {"cpu": _plugin("cpu", 0), "fast": _plugin("fast", 100)}
    clients, failures = backends.make_clients(available, None)
    assert list(clients) == ["fast", "cpu"]
    assert failures == {}


def test_requested_order_wins_and_aliases_resolve():
    available = {"cpu": _plugin("cpu", 0), "cuda": _plugin("cuda", 100, aliases=("gpu",))}
    clients, _ = backends.make_clients(available, ["cpu", "gpu"])
    assert list(clients) == ["cpu", "cuda"]
    clients, _ = backends.make_clients(available, ["cpu"])
    assert list(clients) == ["cpu"]


def test_failing_plugin_is_warned_about_and_skipped():
    available = {"cpu": _plugin("cpu"), "bad": _plugin("bad", 5, error=ValueError("boom"))}
    with pytest.warns(BackendWarning, match="'bad'.*plax-bad.*boom"):
        clients, failures = backends.make_clients(available, None)
    assert list(clients) == ["cpu"]
    assert "boom" in failures["bad"]


def test_plugin_without_runtime_is_skipped_quietly():
    missing = BackendUnavailableError("pip install plax-acc[runtime]")
    available = {"cpu": _plugin("cpu"), "acc": _plugin("acc", 5, error=missing)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clients, failures = backends.make_clients(available, None)
    assert list(clients) == ["cpu"]
    assert "plax-acc[runtime]" in failures["acc"]


def test_requested_failing_plugin_raises():
    available = {"cpu": _plugin("cpu"), "bad": _plugin("bad", error=ValueError("boom"))}
    with pytest.raises(RuntimeError, match="'bad'.*boom"):
        backends.make_clients(available, ["bad", "cpu"])


def test_requested_absent_plugin_names_the_package():
    with pytest.raises(RuntimeError, match="'gpu' was requested.*plax-cuda12"):
        backends.make_clients({"cpu": _plugin("cpu")}, ["gpu"])


def test_no_backend_at_all_is_an_error():
    with pytest.warns(BackendWarning):
        with pytest.raises(RuntimeError, match="No plax backend"):
            backends.make_clients({"bad": _plugin("bad", error=ValueError("x"))}, None)


# --- the real environment variables, in fresh processes.

def _run(code, **env):
    full_env = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env,
                          capture_output=True, text=True, timeout=120)


def test_plax_platforms_tpu_names_plax_tpu():
    proc = _run("import plax_runtime.api as api; api.devices()", PLAX_PLATFORMS="tpu")
    assert proc.returncode != 0
    assert "RuntimeError" in proc.stderr and "plax-tpu" in proc.stderr


def test_jax_platforms_cpu_and_device_count_option():
    proc = _run("""
        from plax._src import config
        config.config.update("jax_num_cpu_devices", 3)
        import plax_runtime.api as api
        print(api.default_backend(), api.device_count())
        """, JAX_PLATFORMS="cpu", XLA_FLAGS="")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["cpu", "3"]


def test_runtime_does_not_import_jax():
    proc = _run("""
        import sys, numpy as np
        import plax_runtime.api as api
        x = api.device_put(np.arange(3.0), api.devices()[1])
        assert float(np.asarray(x).sum()) == 3.0
        print('jax' in sys.modules)
        """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_cuda_plugin_without_runtime_names_the_wheel():
    from plax_cuda12 import make_cuda_client
    if _has_module("jax_plugins.xla_cuda12"):
        pytest.skip("the CUDA runtime is installed here")
    with pytest.raises(BackendUnavailableError,
                       match=r"jax-cuda12-pjrt==0\.10\.2.*runtime extra of plax-cuda12"):
        make_cuda_client()


def test_tpu_plugin_without_runtime_names_libtpu(monkeypatch):
    from plax_tpu import make_tpu_client
    monkeypatch.delenv("TPU_LIBRARY_PATH", raising=False)
    monkeypatch.setitem(sys.modules, "libtpu", None)  # as if it were not installed
    with pytest.raises(BackendUnavailableError,
                       match=r"libtpu==0\.0\.42.*runtime extra of plax-tpu"):
        make_tpu_client()


def test_tpu_plugin_without_a_chip_is_skipped_quietly(monkeypatch):
    """With libtpu installed but no chip attached, the client is not even tried (libtpu
    would ask a cloud metadata server for minutes): a quiet BackendUnavailableError."""
    import plax_tpu
    if not _has_module("libtpu"):
        pytest.skip("libtpu is not installed here")
    monkeypatch.setattr(plax_tpu, "attached_chips", lambda: 0)
    monkeypatch.delenv("PLAX_FORCE_TPU_INIT", raising=False)
    monkeypatch.delenv("JAX_FORCE_TPU_INIT", raising=False)
    with pytest.raises(BackendUnavailableError, match="no TPU chip is attached"):
        plax_tpu.make_tpu_client()


def test_devices_with_libtpu_and_no_chip_says_nothing():
    """`plax.devices()` on a host with libtpu and no TPU: the CPU devices, no TPU client
    and nothing on stderr (libtpu is not loaded at all)."""
    if not _has_module("libtpu"):
        pytest.skip("libtpu is not installed here")
    proc = _run("""
        import sys, plax
        print(plax.devices()[0].platform, "libtpu" in sys.modules)
        """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["cpu", "False"]
    assert proc.stderr == "", proc.stderr


def _has_module(name):
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_backend_plugin_client_type():
    assert isinstance(api.get_backend(), xc.Client)


def test_malformed_plugin_is_skipped(monkeypatch):
    from plax.extend import registry as plugins
    good = _plugin("cpu")
    monkeypatch.setattr(plugins, "load_group", lambda group: {"cpu": good, "odd": object()})
    with pytest.warns(BackendWarning, match="'odd'.*not a BackendPlugin"):
        assert backends.installed_plugins() == {"cpu": good}


def test_xla_info_logs_stay_quiet():
    """Creating a client must not print XLA's INFO lines (device counts) on stderr."""
    proc = subprocess.run([sys.executable, "-c", "import plax; plax.devices()"],
                          capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"})
    assert proc.returncode == 0, proc.stderr
    assert "pjrt_client" not in proc.stderr, proc.stderr
