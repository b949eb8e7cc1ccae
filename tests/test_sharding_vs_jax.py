"""plax's shardings against JAX's (JAX in a subprocess; skipped where it is not
installed): the XLA sharding, the per-device index map, reprs and (with rich) the
pictures of NamedShardings on several meshes, and the output shardings jit reports."""
import importlib.util
import io
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
from plax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="JAX is not installed")

# (mesh shape, axis names, spec entries, array shape)
CASES = [((2, 4), ("x", "y"), ["x"], (8, 8)),
         ((2, 4), ("x", "y"), ["x", "y"], (8, 8)),
         ((2, 4), ("x", "y"), [None, "y"], (4, 8)),
         ((2, 4), ("x", "y"), [["x", "y"]], (16, 2)),
         ((2, 4), ("x", "y"), [["y", "x"], None], (8, 3)),
         ((2, 4), ("x", "y"), ["y", "x"], (8, 8)),
         ((2, 4), ("x", "y"), [], (4, 4)),
         ((2, 2, 2), ("a", "b", "c"), ["c", None, ["a", "b"]], (2, 3, 4)),
         ((8,), ("d",), [None, "d"], (3, 16)),
         ((1, 8), ("one", "d"), ["one", "d"], (2, 8))]

# the keywords of the pictures, alternating over the cases
PICTURE_KEYWORDS = [{}, {"scale": 0.5, "min_width": 5, "max_width": 40}]

_JAX_SIDE = """
    import contextlib, importlib.util, io, json, sys
    import numpy as np
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    cases, PICTURE_KEYWORDS = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    out = []
    for shape, names, spec, arr in cases:
        mesh = Mesh(np.array(jax.devices()[:int(np.prod(shape))]).reshape(shape), names)
        s = NamedSharding(mesh, P(*[tuple(e) if isinstance(e, list) else e for e in spec]))
        index = {d.id: [[i.start, i.stop] for i in idx]
                 for d, idx in s.devices_indices_map(tuple(arr)).items()}
        picture = io.StringIO()
        if len(arr) in (1, 2) and importlib.util.find_spec("rich"):
            with contextlib.redirect_stdout(picture):
                jax.debug.visualize_sharding(tuple(arr), s, **PICTURE_KEYWORDS[len(out) % 2])
        out.append([str(s._to_xla_hlo_sharding(len(arr))), index, repr(s.spec),
                    picture.getvalue()])
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    a = jax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", None)))
    b = jax.device_put(np.ones((4, 8), np.float32), NamedSharding(mesh, P(None, "y")))
    outs = jax.jit(lambda a, b: (a @ b, (a @ b).sum(0), a.T))(a, b)
    print(json.dumps([out, [repr(o.sharding.spec) for o in outs]]))
"""


@pytest.fixture(scope="module")
def jax_answers():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_JAX_SIDE), json.dumps(CASES),
                           json.dumps(PICTURE_KEYWORDS)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", range(len(CASES)))
def test_named_sharding_layouts_match_jax(case, jax_answers):
    shape, names, spec, arr = CASES[case]
    mesh = Mesh(np.array(plax.devices()[:int(np.prod(shape))]).reshape(shape), names)
    s = NamedSharding(mesh, P(*[tuple(e) if isinstance(e, list) else e for e in spec]))
    hlo, index, spec_repr, _ = jax_answers[0][case]
    assert str(s._to_xla_hlo_sharding(len(arr))) == hlo
    assert {d.id: [[i.start, i.stop] for i in idx]
            for d, idx in s.devices_indices_map(tuple(arr)).items()} == \
        {int(k): v for k, v in index.items()}
    assert repr(s.spec) == spec_repr
    assert NamedSharding(mesh.abstract_mesh, s.spec)._to_sdy_sharding(len(arr)) == \
        s._to_sdy_sharding(len(arr))


@pytest.mark.skipif(importlib.util.find_spec("rich") is None, reason="rich is not installed")
@pytest.mark.parametrize("case", [i for i, c in enumerate(CASES) if len(c[3]) in (1, 2)])
def test_sharding_pictures_match_jax(case, jax_answers):
    shape, names, spec, arr = CASES[case]
    mesh = Mesh(np.array(plax.devices()[:int(np.prod(shape))]).reshape(shape), names)
    s = NamedSharding(mesh, P(*[tuple(e) if isinstance(e, list) else e for e in spec]))
    picture = io.StringIO()
    plax.debug.visualize_sharding(arr, s, file=picture, **PICTURE_KEYWORDS[case % 2])
    assert picture.getvalue() == jax_answers[0][case][3]


def test_output_shardings_match_jax(jax_answers):
    mesh = Mesh(np.array(plax.devices()).reshape(2, 4), ("x", "y"))
    a = plax.device_put(np.ones((8, 4), np.float32), NamedSharding(mesh, P("x", None)))
    b = plax.device_put(np.ones((4, 8), np.float32), NamedSharding(mesh, P(None, "y")))
    outs = plax.jit(lambda a, b: (a @ b, (a @ b).sum(0), a.T))(a, b)
    assert [repr(o.sharding.spec) for o in outs] == jax_answers[1]
    assert all(o.sharding.mesh is mesh for o in outs)
    assert AbstractMesh((2, 4), ("x", "y")) is not mesh.abstract_mesh
