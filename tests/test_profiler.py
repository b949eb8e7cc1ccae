"""plax.profiler: traces written where TensorBoard looks, read back with ProfileData;
annotations; one trace at a time; the profiler server; device memory profiles."""
import gzip
import json
import threading
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import plax
import plax.errors
import plax.numpy as jnp
import plax.profiler as profiler
from jax_reference import requires_jax, run_reference
from plax_runtime import pgle


def _event_names(xplane: Path) -> set[str]:
    data = profiler.ProfileData.from_file(str(xplane))
    return {event.name for plane in data.planes for line in plane.lines
            for event in line.events}


def _only_run(log_dir: Path) -> Path:
    (run,) = (log_dir / "plugins" / "profile").iterdir()
    return run


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One trace of a jitted function run inside annotations, shared by the tests
    that read it (a session costs about a second)."""
    log_dir = tmp_path_factory.mktemp("trace")
    options = profiler.ProfileOptions()
    options.python_tracer_level = 0  # keep the trace small: no Python function events

    @plax.jit
    def scaled_sine(x):
        with plax.named_scope("my_scope"):
            return jnp.sin(x) * 2.0

    @profiler.annotate_function
    def annotated_step(x):
        return scaled_sine(x).block_until_ready()

    x = jnp.arange(8.0)
    with profiler.trace(log_dir, profiler_options=options):
        with profiler.TraceAnnotation("my_annotation", size=8):
            out = scaled_sine(x).block_until_ready()
        with profiler.StepTraceAnnotation("train", step_num=3):
            annotated_step(x)
    np.testing.assert_allclose(out, np.sin(np.arange(8.0)) * 2.0, rtol=1e-6)
    return log_dir


def test_trace_is_written_where_tensorboard_looks(traced):
    run = _only_run(traced)
    (xplane,) = run.glob("*.xplane.pb")
    assert xplane.stat().st_size > 0
    assert list(run.glob("*.trace.json.gz"))


def test_trace_holds_annotations_compiles_and_executions(traced):
    names = _event_names(next(_only_run(traced).glob("*.xplane.pb")))
    assert {"my_annotation", "train", "traced.<locals>.annotated_step"} <= names
    assert any("jit_scaled_sine" in n for n in names)  # XLA's passes over the module
    assert any("Execute" in n for n in names)  # the runs of the executable


def test_trace_metadata_names_the_versions(traced):
    data = profiler.ProfileData.from_file(str(next(_only_run(traced).glob("*.xplane.pb"))))
    metadata = dict(data.find_plane_with_name("/host:metadata").stats)
    assert metadata["plax_version"] == plax.__version__
    assert metadata["jaxlib_version"] == "0.10.2"
    assert metadata["cpu_version"] == plax.devices()[0].client.platform_version


def test_python_calls_are_traced_only_when_asked_for():
    # (jaxlib's Python tracer stalled long-running test workers: off by default)
    assert profiler.ProfileOptions().python_tracer_level == 0
    assert profiler.ProfileOptions().host_tracer_level == 2


def test_start_stop_and_errors(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    profiler.start_trace(tmp_path)
    try:
        with pytest.raises(RuntimeError, match="already been started"):
            profiler.start_trace(tmp_path)
        with pytest.raises(RuntimeError, match="already been started"):
            with profiler.trace(tmp_path):
                pass
    finally:
        profiler.stop_trace()
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    assert list(_only_run(tmp_path).glob("*.xplane.pb"))


def test_failed_export_leaves_the_profiler_usable(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    profiler.start_trace(blocker / "log")
    with pytest.raises(plax.errors.JaxRuntimeError, match="not a directory"):
        profiler.stop_trace()
    with profiler.trace(tmp_path / "log"):
        pass
    assert list(_only_run(tmp_path / "log").glob("*.xplane.pb"))


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="log_dir"):
        profiler.start_trace(3)
    with pytest.raises(TypeError, match="profiler_options"):
        profiler.start_trace(tmp_path, profiler_options={"host_tracer_level": 1})
    with pytest.raises(TypeError, match="callable"):
        profiler.annotate_function(3)
    with pytest.raises(ValueError, match="port"):
        profiler.start_server(-1)
    with pytest.raises(ValueError, match="No active profiler server"):
        profiler.stop_server()


def test_perfetto_trace_drops_metadata(tmp_path):
    options = profiler.ProfileOptions()
    options.python_tracer_level = 0
    with profiler.trace(tmp_path, create_perfetto_trace=True, profiler_options=options):
        with profiler.TraceAnnotation("for_perfetto"):
            plax.jit(lambda x: x + 1)(1.0).block_until_ready()
    (perfetto,) = _only_run(tmp_path).glob("perfetto_trace.json.gz")
    with gzip.open(perfetto) as f:
        events = json.load(f)
    assert "metadata" not in events
    assert any(e.get("name") == "for_perfetto" for e in events["traceEvents"])


def test_perfetto_link_serves_the_trace_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(profiler, "PERFETTO_PORT", 0)  # any free port
    options = profiler.ProfileOptions()
    options.python_tracer_level = 0
    profiler.start_trace(tmp_path, create_perfetto_link=True, profiler_options=options)
    fetched = []

    def fetch():  # plays ui.perfetto.dev: waits for the printed link, then fetches
        while "Open URL" not in (text := capsys.readouterr().out):
            threading.Event().wait(0.05)
        url = text.split("url=")[1].split()[0]
        with urllib.request.urlopen(url, timeout=30) as response:
            fetched.append(response.read())

    thread = threading.Thread(target=fetch)
    thread.start()
    profiler.stop_trace()  # returns once the trace was fetched
    thread.join(timeout=30)
    assert fetched and gzip.decompress(fetched[0]).startswith(b"{")


def test_profiler_server_starts_once(tmp_path):
    server = profiler.start_server(0)
    try:
        assert server is not None
        with pytest.raises(ValueError, match="Only one profiler server"):
            profiler.start_server(0)
    finally:
        profiler.stop_server()
    with pytest.raises(ValueError, match="No active profiler server"):
        profiler.stop_server()


def _proto_fields(data: bytes) -> list[int]:
    """The field numbers of a serialized protocol buffer (raises if it is not one)."""
    return [number for number, _, _ in pgle.proto_fields(data)]


def test_device_memory_profile_is_gzipped_pprof(tmp_path):
    keep = jnp.ones((256, 256))  # a live buffer for the profile to show
    profile = profiler.device_memory_profile()
    assert profile[:2] == b"\x1f\x8b"  # gzip
    fields = set(_proto_fields(gzip.decompress(profile)))
    # pprof's Profile: sample_type (1), sample (2), location (4), function (5),
    # string_table (6)
    assert {1, 2, 6} <= fields
    assert b"buffer" in gzip.decompress(profile)
    path = tmp_path / "memory.prof"
    profiler.save_device_memory_profile(path)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    with pytest.raises(RuntimeError):
        profiler.device_memory_profile(backend="no_such_backend")
    del keep


_SAME_SCRIPT = """
import glob, os, tempfile
log_dir = tempfile.mkdtemp()
errors = []
try:
    jax.profiler.stop_trace()
except Exception as e:
    errors.append(type(e).__name__)
with jax.profiler.trace(log_dir):
    try:
        jax.profiler.start_trace(log_dir)
    except Exception as e:
        errors.append(type(e).__name__)
    with jax.profiler.TraceAnnotation("same_annotation"):
        jax.jit(lambda x: x * 2)(jnp.ones(3)).block_until_ready()
files = sorted(os.path.basename(p).split(".", 1)[1]  # <host>.xplane.pb -> xplane.pb
               for p in glob.glob(log_dir + "/plugins/profile/*/*"))
data = jax.profiler.ProfileData.from_file(glob.glob(log_dir + "/plugins/profile/*/*.xplane.pb")[0])
names = {e.name for p in data.planes for l in p.lines for e in l.events}
memory = jax.profiler.device_memory_profile()
result = {"errors": errors, "files": files, "annotated": "same_annotation" in names,
          "memory_gzip": memory[:2] == b"\\x1f\\x8b",
          "names": sorted(n for n in dir(jax.profiler) if not n.startswith("_"))}
"""


@requires_jax
def test_same_script_as_jax():
    ours, theirs = run_reference(_SAME_SCRIPT, "plax"), run_reference(_SAME_SCRIPT)
    assert set(theirs.pop("names")) <= set(ours.pop("names"))
    assert ours == theirs
