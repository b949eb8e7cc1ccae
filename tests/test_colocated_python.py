"""plax.experimental.colocated_python against JAX's (one subprocess each): colocated
CPU devices, colocated functions and their specialization, colocated classes, and the
errors of bad use. In one process the function runs here, on its arguments; what JAX
ships is a cloudpickled copy of it, so state it closes over is the copy's."""
from __future__ import annotations

import pytest
from jax_differential import requires_jax, start_driver_in_jax

import plax
from plax.experimental import colocated_python as cp
from plax_sharding.colocated_python import pickling

pytest.importorskip("cloudpickle")

_CODE = """
import importlib, sys
cp = importlib.import_module(jax.__name__ + ".experimental.colocated_python")
events = []
result = []

def attempt(name, thunk):
    try:
        value = thunk()
        result.append([name, repr(value)])
    except Exception as err:
        # (JAX's AttributeErrors are its own attribute reads: the class is what counts)
        result.append([name, type(err).__name__,
                       str(err)[:60] if isinstance(err, ValueError) else ""])

devices = jax.devices()
mesh = jax.make_mesh((2, 2), ("a", "b"), devices=devices[:4])
result.append(repr(cp.colocated_cpu_devices(devices[2:4])))
result.append(repr(cp.colocated_cpu_devices(mesh)))
s = jax.NamedSharding(jax.sharding.Mesh(devices[:1], ("x",)), jax.P())
x = jax.device_put(1, s)
other = jax.device_put(1, devices[1])

add_one = cp.colocated_python(lambda v: v + 1)
y = add_one(x)
result.append([repr(y), y.sharding == x.sharding, add_one.__name__])
attempt("pytree", lambda: cp.colocated_python(lambda t, k: {"a": t[0], "b": [k]})((x, x), k=x))
attempt("int arg", lambda: add_one(1))
attempt("numpy arg", lambda: add_one(np.ones(2)))
attempt("int out", lambda: cp.colocated_python(lambda v: 1)(x))
attempt("no devices", lambda: cp.colocated_python(lambda: None)())
attempt("device lists", lambda: cp.colocated_python(lambda a, b: a)(x, other))
attempt("twice", lambda: add_one.specialize(devices=devices[:1]).specialize(devices=devices[:1]))
attempt("twice fn", lambda: add_one.specialize(out_specs_fn=len).specialize(out_specs_fn=len))
attempt("with devices", lambda: cp.colocated_python(lambda: None).specialize(devices=devices[:1])())
attempt("out specs", lambda: add_one.specialize(out_specs_fn=lambda v: v)(x))
attempt("bad out specs", lambda: add_one.specialize(out_specs_fn=lambda v: 1)(x))
spec = jax.ShapeDtypeStruct((), jnp.int32, sharding=s)
fixed = add_one.specialize(in_specs=((spec,), {}), out_specs_fn=lambda v: spec)
attempt("in specs", lambda: fixed(x))
attempt("in specs, int", lambda: fixed(3))
attempt("in specs, int, devices",
        lambda: add_one.specialize(in_specs=((spec,), {}), devices=devices[:1])(3))

counter = []
def count(v):
    counter.append(v)
    return v
counted = cp.colocated_python(count)
counted(x), counted(x)
result.append(["counter is a copy's", len(counter)])
attempt("closes over a sharding", lambda: cp.colocated_python(lambda v: s).specialize(
    out_specs_fn=lambda v: v)(x))

class Adder:
    '''adds'''
    def __init__(self, increment):
        sys.modules["__main__"].events.append("created")
        self.increment = increment
    def __del__(self):
        sys.modules["__main__"].events.append("destroyed")
    def add(self, v):
        return v + self.increment
    def nothing(self):
        return None

Wrapped = cp.colocated_python_class(Adder)
adder = Wrapped(1)
result.append([Wrapped.__name__, Wrapped.__doc__, list(events),
               [name in vars(adder) for name in ("add", "nothing", "__del__")]])
attempt("add", lambda: adder.add(x))
attempt("add again", lambda: adder.add(x))
attempt("int to a method", lambda: adder.add(1))
attempt("method without arguments", lambda: adder.nothing())
attempt("specialized method", lambda: adder.nothing.specialize(devices=devices[:1])())
del adder
result.append(list(events))

class Broken:
    def __init__(self):
        raise KeyError("no")
    def get(self, v):
        return v
broken = cp.colocated_python_class(Broken)()
attempt("constructor fails", lambda: broken.get(x))
attempt("and again", lambda: broken.get(x))
"""


def _result(lib: str):
    """Starts `_CODE` with `lib` as `jax` in a subprocess; returns the wait for its result."""
    return start_driver_in_jax(f"import json\nimport numpy as np\nimport {lib} as jax\n"
                               f"import {lib}.numpy as jnp\n{_CODE}\n"
                               "print(json.dumps(result))\n", [])


@requires_jax
def test_colocated_python_matches_jax():
    theirs, mine = _result("jax"), _result("plax")  # (both run at once)
    assert mine() == theirs()


def test_without_cloudpickle_a_call_says_so(monkeypatch):
    monkeypatch.setattr(pickling, "cloudpickle", None)
    monkeypatch.setattr(pickling, "_pickler_class", pickling._pickler_class.__wrapped__)
    with pytest.raises(ModuleNotFoundError, match="cloudpickle"):
        cp.colocated_python(lambda v: v)(plax.numpy.ones(()))


def test_devices_travel_as_cpu_devices_by_id(devs):
    mesh = plax.make_mesh((2, 4), ("x", "y"))
    sharding = plax.NamedSharding(mesh, plax.P("x"))
    assert pickling.roundtrip(sharding) == sharding
    assert pickling.roundtrip(devs[3]) is devs[3]
    with pytest.raises(ValueError, match="Invalid device ID 99"):
        pickling._cpu_device(99)
