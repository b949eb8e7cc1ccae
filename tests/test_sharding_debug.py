"""plax.debug's sharding pictures and inspection, plax.monitoring's listener API, and
the names plax-sharding contributes to shared modules (plax.lax, plax.debug)."""
import importlib.util
import io
import re
import sys

import numpy as np
import pytest

import plax
from plax.sharding import Mesh, NamedSharding, PartitionSpec as P


@pytest.fixture(scope="module")
def mesh():
    return Mesh(np.array(plax.devices()).reshape(2, 4), ("x", "y"))


def picture(x, **kwargs) -> str:
    out = io.StringIO()
    plax.debug.visualize_array_sharding(x, file=out, **kwargs)
    return out.getvalue()


@pytest.fixture
def without_rich(monkeypatch):
    """rich hidden, so the pictures take the plain-text path."""
    monkeypatch.setitem(sys.modules, "rich", None)


def test_plain_picture_of_a_2d_tiling(mesh, without_rich):
    x = plax.device_put(np.zeros((4, 8)), NamedSharding(mesh, P("x", "y")))
    lines = picture(x).splitlines()
    assert lines[0] == "┌" + "┬".join(["───────"] * 4) + "┐"
    assert lines[2] == "│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │"
    assert lines[6] == "│ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │"
    assert lines[-1] == "└" + "┴".join(["───────"] * 4) + "┘" and len(lines) == 9


def test_plain_picture_of_replicas_and_of_1d(mesh, without_rich):
    text = picture(plax.device_put(np.zeros((4, 8)), NamedSharding(mesh, P(None, "y"))))
    assert "│ CPU 0,4 │ CPU 1,5 │ CPU 2,6 │ CPU 3,7 │" in text
    text = picture(plax.device_put(np.zeros(8), NamedSharding(mesh, P("x"))))
    assert "│ CPU 0,1,2,3 │ CPU 4,5,6,7 │" in text
    out = io.StringIO()
    plax.debug.visualize_sharding((4,), NamedSharding(mesh, P()), file=out)
    assert "CPU 0,1,2,3,4,5,6,7" in out.getvalue()


@pytest.mark.parametrize("hide_rich", [True, False])
def test_pictures_refuse_bad_input(mesh, monkeypatch, hide_rich):
    if hide_rich:
        monkeypatch.setitem(sys.modules, "rich", None)
    with pytest.raises(ValueError, match="rank 1 or 2"):
        plax.debug.visualize_sharding((2, 2, 2), NamedSharding(mesh, P()))
    with pytest.raises(TypeError, match="plax Array"):
        plax.debug.visualize_array_sharding(np.zeros(3))


needs_rich = pytest.mark.skipif(importlib.util.find_spec("rich") is None,
                                reason="rich is not installed")


@needs_rich
def test_rich_picture_sizes_tiles_like_the_blocks(mesh):
    # (8, 8) over (y, x): 4 rows of tiles, each 10 * 1/4 = 2 lines tall with no blank
    # line, 2 columns 10 * 2.5 / 2 = 12 wide
    x = plax.device_put(np.zeros((8, 8)), NamedSharding(mesh, P("y", "x")))
    lines = picture(x).splitlines()
    assert lines[0] == "┌" + "──────────┬──────────" + "┐"
    assert lines[1:4] == ["│  CPU 0   │  CPU 4   │", "├──────────┼──────────┤",
                          "│  CPU 1   │  CPU 5   │"]
    assert lines[-1] == "└──────────┴──────────┘" and len(lines) == 9
    # a wide array's tiles are wider, a tall one's taller (4 text lines a row)
    wide = picture(plax.device_put(np.zeros((4, 8)), NamedSharding(mesh, P("x", "y"))))
    assert wide.splitlines()[1:6] == ["│          │          │          │          │",
                                      "│  CPU 0   │  CPU 1   │  CPU 2   │  CPU 3   │",
                                      "│          │          │          │          │",
                                      "│          │          │          │          │",
                                      "├──────────┼──────────┼──────────┼──────────┤"]
    # 1-D: one line of labels, each tile as wide as its label
    assert picture(plax.device_put(np.zeros(8), NamedSharding(mesh, P("x")))).splitlines() \
        == ["┌───────────┬───────────┐", "│CPU 0,1,2,3│CPU 4,5,6,7│",
            "└───────────┴───────────┘"]
    small = picture(x, scale=0.5, min_width=3, max_width=30).splitlines()
    assert small[1] == "│CPU 0│CPU 4│" and len(small) == 9


@needs_rich
def test_rich_picture_colours_tiles_on_a_colour_terminal(mesh, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLORTERM", "truecolor")
    x = plax.device_put(np.zeros((4, 8)), NamedSharding(mesh, P("x", "y")))
    out = Terminal()
    plax.debug.visualize_array_sharding(x, file=out)
    text = out.getvalue()
    backgrounds = set(re.findall(r"\x1b\[[0-9;]*48;2;[0-9;]*m", text))
    assert len(backgrounds) == 8, text  # one colour per tile, and no box lines
    assert "┌" not in text and all(f"CPU {i}" in text for i in range(8))
    out = Terminal()
    plax.debug.visualize_array_sharding(x, file=out, use_color=False)
    assert "┌" in out.getvalue() and "48;" not in out.getvalue()


def test_inspect_array_sharding_inside_jit_sees_the_partitioners_choice(mesh):
    seen = []

    @plax.jit
    def f(a, b):
        c = a @ b
        plax.debug.inspect_array_sharding(c, callback=seen.append)
        return c * 2

    a = plax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", None)))
    b = plax.device_put(np.ones((4, 8), np.float32), NamedSharding(mesh, P(None, "y")))
    np.testing.assert_array_equal(np.asarray(f(a, b)), np.full((8, 8), 8.0))
    assert seen == [NamedSharding(mesh, P("x", "y"))]
    f(a, b)
    assert len(seen) == 1  # at compile time only
    eager = []
    plax.debug.inspect_array_sharding(a, callback=eager.append)
    assert eager == [a.sharding]
    one = []
    plax.jit(lambda v: plax.debug.inspect_array_sharding(v, callback=one.append))(np.ones(2))
    assert one == [plax.sharding.SingleDeviceSharding(plax.devices()[0])]


def test_inspect_array_sharding_under_vmap_sees_the_batched_value(mesh):
    seen = []

    def f(row):
        plax.debug.inspect_array_sharding(row, callback=seen.append)
        return row * 2

    x = plax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", "y")))
    np.testing.assert_array_equal(np.asarray(plax.jit(plax.vmap(f))(x)), np.full((8, 4), 2.0))
    assert seen == [NamedSharding(mesh, P("x", "y"))]
    plax.vmap(f)(x)  # eagerly: the batched array's own sharding
    assert seen[1] == x.sharding


def test_with_sharding_constraint_joins_plax_lax():
    from plax_sharding.constraint import with_sharding_constraint
    assert plax.lax.with_sharding_constraint is with_sharding_constraint
    with pytest.raises(AttributeError, match="'plax.lax' has no attribute 'no_such_op'"):
        _ = plax.lax.no_such_op
    assert "visualize_array_sharding" in dir(plax.debug)


def test_monitoring_listener_api():
    events, durations, spans, scalars = [], [], [], []
    listeners = [(plax.monitoring.register_event_listener,
                  plax.monitoring.unregister_event_listener,
                  lambda e, **kw: events.append((e, kw))),
                 (plax.monitoring.register_event_duration_secs_listener,
                  plax.monitoring.unregister_event_duration_listener,
                  lambda e, d, **kw: durations.append((e, d, kw))),
                 (plax.monitoring.register_event_time_span_listener,
                  plax.monitoring.unregister_event_time_span_listener,
                  lambda e, s, t, **kw: spans.append((e, t >= s))),
                 (plax.monitoring.register_scalar_listener,
                  plax.monitoring.unregister_scalar_listener,
                  lambda e, v, **kw: scalars.append(e))]
    for register, _, fn in listeners:
        register(fn)
    try:
        plax.monitoring.record_event("/test/event", where="here")
        plax.monitoring.record_event_duration_secs("/test/duration", 0.5, n=1)
        plax.jit(lambda v: v + 41)(1)
    finally:
        for _, unregister, fn in listeners:
            unregister(fn)
    assert events == [("/test/event", {"where": "here"})]
    assert durations[0] == ("/test/duration", 0.5, {"n": 1})
    names = [e for e, _, _ in durations[1:]]
    assert names == ["/jax/core/compile/jaxpr_trace_duration",
                     "/jax/core/compile/jaxpr_to_mlir_module_duration",
                     "/jax/core/compile/backend_compile_duration"]
    assert [kw["fun_name"] for _, _, kw in durations[1:]] == ["<lambda>", "jit(<lambda>)",
                                                              "jit(<lambda>)"]
    assert ("/jax/core/compile/backend_compile_duration", True) in spans
    assert "/jax/core/compile/jaxpr_trace_duration" in scalars
    with pytest.raises(ValueError, match="not a registered event listener"):
        plax.monitoring.unregister_event_listener(print)
