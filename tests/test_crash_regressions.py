"""Programs that once killed the process, each a regression test.

The programs run in one subprocess, in order, each announcing itself before it runs;
a crash ends that subprocess, fails the program that was running and starts a new
subprocess at the next one, so a crash fails its own test and never the suite.
Expected answers are JAX 0.10.2's (shapes, dtypes and values printed by JAX for the
same source), or, where JAX crashes too, what it returns for the same program
without the crash (the jitted condition, the duplicate donation).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# name -> (source of an expression, expected: "shape dtype values" or an error class)
PROGRAMS = {
    # XLA's HLO export aborts on a call in a while condition that does not depend on
    # the loop's data (zero-sized carries make every condition such a one).
    "while_false_empty": ("lax.while_loop(lambda c: False, lambda c: c, jnp.ones((0,)))",
                          "(0,) float32 []"),
    "jit_while_false_empty": (
        "jax.jit(lambda x: lax.while_loop(lambda c: False, lambda c: c, x))(jnp.ones((0,)))",
        "(0,) float32 []"),
    "gcd_empty": ("jnp.gcd(jnp.ones((0,), jnp.int32), jnp.ones((0,), jnp.int32))",
                  "(0,) int32 []"),
    "lcm_empty": ("jnp.lcm(jnp.ones((0,), jnp.int32), jnp.ones((0,), jnp.int32))",
                  "(0,) int32 []"),
    "gcd_2x0": ("jnp.gcd(jnp.ones((2, 0), jnp.int32), 3)", "(2, 0) int32 [[], []]"),
    "vmap_while_empty_batch": (
        "jax.vmap(lambda x: lax.while_loop(lambda c: c < 3, lambda c: c + 1, x))"
        "(jnp.ones((0,)))", "(0,) float32 []"),
    "vmap_fori_empty_batch": (
        "jax.vmap(lambda x, n: lax.fori_loop(0, n, lambda i, c: c + 1, x))"
        "(jnp.ones((0,)), jnp.ones((0,), jnp.int32))", "(0,) float32 []"),
    # JAX crashes on this one too: its condition is an inner jit's call.
    "while_jitted_cond_empty": (
        "jax.jit(lambda x: lax.while_loop(jax.jit(lambda c: c.sum() > 1), lambda c: c, x))"
        "(jnp.ones((0,)))", "(0,) float32 []"),
    "while_checkpointed_cond_empty": (
        "lax.while_loop(jax.checkpoint(lambda c: c.sum() > 1), lambda c: c, jnp.ones((0,)))",
        "(0,) float32 []"),
    "while_in_cond_empty": (
        "lax.while_loop(lambda c: lax.while_loop(lambda d: False, lambda d: d, c).sum() > 1,"
        " lambda c: c, jnp.ones((0,)))", "(0,) float32 []"),
    "cond_in_while_cond_empty": (
        "lax.while_loop(lambda c: lax.cond(True, lambda c: c.sum() > 1, lambda c: False, c),"
        " lambda c: c, jnp.ones((0,)))", "(0,) float32 []"),
    "while_const_cond_counts": (
        "jax.jit(lambda x: lax.while_loop(lambda c: c[0] < 3,"
        " lambda c: (c[0] + 1, c[1] * 2), (0, x)))(jnp.ones((0, 2)))[0]", "() int32 3"),
    # PJRT crashes when one buffer is donated and passed again on several devices.
    "donate_twice_split": (
        "jax.jit(lambda a, b: a * b, donate_argnums=(0, 1))(split(jnp.arange(8.0)), again())",
        "JaxRuntimeError"),
    "donate_once_pass_twice_split": (
        "jax.jit(lambda a, b: a * b, donate_argnums=(1,))(split(jnp.arange(8.0)), again())",
        "JaxRuntimeError"),
    "donate_twice_one_device": (
        "jax.jit(lambda a, b: a + b, donate_argnums=(0, 1))(keep(jnp.arange(3.0)), again())",
        "JaxRuntimeError"),
}

_RUNNER = r"""
import json, sys, warnings
import numpy as np
import plax as jax
import plax.numpy as jnp
from plax import lax
from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
warnings.simplefilter("ignore")
mesh = Mesh(np.array(jax.devices()), ("x",))
kept = []

def keep(x):  # `again()` in the same call passes the same Array (the same buffer)
    kept[:] = [x]
    return x

def again():
    return kept[0]

def split(x):  # placed over every device
    return keep(jax.device_put(x, NamedSharding(mesh, P("x"))))

for name, source in json.loads(sys.argv[1]):
    print("START", name, flush=True)
    try:
        value = eval(source)
        a = np.asarray(value)
        answer = f"{a.shape} {a.dtype} {a.tolist()}"
    except Exception as e:
        answer = type(e).__name__
    print("DONE", name, json.dumps(answer), flush=True)
"""


@pytest.fixture(scope="module")
def answers() -> dict[str, str]:
    """name -> the answer, or `crashed (signal or code)` for the program that was
    running when its subprocess died."""
    todo = list(PROGRAMS.items())
    found: dict[str, str] = {}
    while todo:
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_RUNNER),
                               json.dumps([(n, s) for n, (s, _) in todo])],
                              capture_output=True, text=True, timeout=600)
        started = None
        for line in proc.stdout.splitlines():
            kind, name, *rest = line.split(" ", 2)
            if kind == "START":
                started = name
            elif kind == "DONE":
                found[name], started = json.loads(rest[0]), None
        if started is not None:
            found[started] = f"crashed ({proc.returncode}): {proc.stderr[-400:]}"
        elif proc.returncode:
            raise AssertionError(f"the runner failed:\n{proc.stderr[-3000:]}")
        todo = [(n, p) for n, p in todo if n not in found]
    return found


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_does_not_crash(answers, name):
    assert answers[name] == PROGRAMS[name][1]


def test_duplicate_donation_names_both_arguments():
    import plax
    from plax import numpy as jnp
    x = jnp.arange(3.0)
    f = plax.jit(lambda a, b: a + b, donate_argnums=(0,))
    for _ in range(2):  # the first call and the cached (C++) one
        with pytest.raises(plax.errors.JaxRuntimeError,
                           match=r"argument 0 \(a\) is donated and also passed as "
                                 r"argument 1 \(b\)"):
            f(x, x)
        assert not x.is_deleted()
    assert f(x, jnp.copy(x)).tolist() == [0.0, 2.0, 4.0]
    assert x.is_deleted()
