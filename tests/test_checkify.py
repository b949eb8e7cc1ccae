"""plax.experimental.checkify: error messages and where they come from, against JAX
(which is the specification) in subprocesses, and the API's own errors."""
from __future__ import annotations

import numpy as np
import pytest
from jax_reference import requires_jax, run_reference

import plax
import plax.numpy as jnp
from plax.experimental import checkify

_CASES = """
if jax.__name__ == "plax":
    import plax.experimental.checkify as checkify
else:
    from jax.experimental import checkify
lax = jax.lax
result = {}
f32 = jnp.float32


def run(name, f, *args, errors=checkify.all_checks):
    try:
        err, out = checkify.checkify(f, errors=errors)(*args)
        leaves = jax.tree_util.tree_leaves(out)
        result[name] = [err.get(), np.asarray(leaves[0]).tolist() if leaves else None]
    except Exception as e:
        result[name] = type(e).__name__ + ": " + str(e)[:100]


def loop_body(i, x):
    checkify.check(x < 10., "x got too big: {}", x)
    return x * 2.


def wcond(x):
    checkify.check(x != 41., "cond saw {}", x)
    return x < 100.


def scan_body(c, x):
    checkify.check(x != 3, "bad element {}", x)
    return c + x, jnp.sqrt(c - 2.)


def with_check(x):
    checkify.check(x > 0, "need positive, got {}", x)
    return x ** 2


def log_once(c):
    return c[0] + 1, jnp.log(c[1] - 1.)


def pick(p, x):
    return lax.cond(p, lambda x: x / 0., jnp.log, x)


inner = jax.jit(lambda x: jnp.sqrt(x) + 1)
run("fori", lambda x: lax.fori_loop(0, 6, loop_body, x), f32(1.))
run("fori ok", lambda x: lax.fori_loop(0, 2, loop_body, x), f32(1.))
run("while", lambda x: lax.while_loop(wcond, lambda x: x * 3. - 1., x), f32(2.))
run("while body nan", lambda x: lax.while_loop(lambda c: c[0] < 3, log_once, (0, x)), f32(3.))
run("scan", lambda xs: lax.scan(scan_body, 0., xs), jnp.arange(5.))
run("scan ok", lambda xs: lax.scan(scan_body, 10., xs)[0], jnp.arange(3.))
run("cond", pick, True, f32(2.))
run("cond other", pick, False, f32(-2.))
run("switch", lambda i, x: lax.switch(i, [lambda x: x, lambda x: x[jnp.array([0, 7, 1])],
                                          jnp.sin], x), jnp.int32(1), jnp.ones(3))
run("nested jit", lambda x: inner(x) * 2, f32(-1.))
run("nested jit ok", lambda x: inner(x) * 2, f32(4.))
run("grad inside", lambda x: jax.grad(lambda y: jnp.log(y) * y)(x), f32(-1.))
run("grad of check", lambda x: jax.grad(with_check)(x), f32(-3.))
run("dce kept", lambda x: (with_check(x), 1.)[1], f32(-3.))
run("gather", lambda x, i: x[i], jnp.arange(4.), jnp.array([0, 9, 2]))
run("dynamic_update_slice", lambda x, i: lax.dynamic_update_slice(x, jnp.ones(2), (i,)),
    jnp.zeros(4), jnp.int32(3))
run("scatter", lambda x, i: x.at[i].set(5.)[:0], jnp.zeros(4), jnp.array([1, 6]))
run("int div", lambda a, b: (a // b)[:0], jnp.arange(3), jnp.array([1, 0, 2]))
run("errors nan only", with_check, f32(-3.), errors=checkify.nan_checks)
run("errors float", lambda x: jnp.log(x) / 0., f32(-1.), errors=checkify.div_checks)
run("vmap cond", lambda xs: jax.vmap(lambda x: lax.cond(x > 0, jnp.log, lambda y: y / 0., x))(
    xs), jnp.array([1., -1.]))
err, out = jax.jit(checkify.checkify(lambda x: with_check(jnp.sin(x)),
                                     errors=checkify.all_checks))(f32(-1.))
result["jit(checkify)"] = err.get()
err, out = jax.vmap(checkify.checkify(with_check))(jnp.array([1., -2., 3., -4.]))
result["vmap(checkify)"] = err.get()
result["grad(checkify)"] = float(jax.grad(lambda x: checkify.checkify(with_check)(x)[1])(f32(3.)))
err, _ = checkify.checkify(lambda x: checkify.check_error(checkify.checkify(with_check)(x)[0]))(
    f32(-1.))
result["check_error inside"] = err.get()
try:
    checkify.check_error(checkify.checkify(with_check)(f32(-1.))[0])
    result["check_error eager"] = None
except Exception as e:
    result["check_error eager"] = [type(e).__name__, str(e)]
result["debug_check eager"] = checkify.debug_check(jnp.array(False), "never raised") is None
err, _ = checkify.checkify(lambda x: checkify.debug_check(x > 0, "debug {}", x))(f32(-1.))
result["debug_check inside"] = err.get()
"""


@requires_jax
def test_messages_match_jax():
    theirs, mine = run_reference(_CASES, "jax"), run_reference(_CASES, "plax")
    different = {k: (mine.get(k), v) for k, v in theirs.items() if mine.get(k) != v}
    assert not different, different
    assert theirs["fori"][0] == "x got too big: 16.0 (`check` failed)"
    assert theirs["vmap(checkify)"].startswith("at mapped index 1: need positive")


def _positive(x):
    checkify.check(x > 0, "need positive, got {x}", x=x)
    return jnp.sqrt(x)


def test_error_value():
    err, out = checkify.checkify(_positive)(jnp.float32(4.0))
    assert err.get() is None and str(err) == "Error(None)" and float(out) == 2.0
    err.throw()
    err, _ = checkify.checkify(_positive)(jnp.float32(-4.0))
    assert err.get() == "need positive, got -4.0 (`check` failed)"
    assert isinstance(err.get_exception(), checkify.FailedCheckError)
    with pytest.raises(checkify.JaxRuntimeError, match="need positive"):
        err.throw()
    assert issubclass(checkify.JaxRuntimeError, ValueError)
    leaves, tree = plax.tree_util.tree_flatten(err)  # a pytree: jit can return it
    assert plax.tree_util.tree_unflatten(tree, leaves).get() == err.get()
    assert checkify.init_error.get() is None


def test_check_outside_checkify():
    checkify.check(jnp.bool_(True), "fine")
    with pytest.raises(checkify.JaxRuntimeError, match=r"bad 3 \(`check` failed\)"):
        checkify.check(jnp.bool_(False), "bad {}", jnp.int32(3))
    with pytest.raises(checkify.JaxRuntimeError):
        plax.vmap(lambda x: checkify.check(x > 0, "vmapped"))(jnp.array([1.0, -1.0]))
    plax.grad(lambda x: (checkify.check(x > 0, "grad"), x * x)[1])(2.0)
    with pytest.raises(ValueError, match="Cannot abstractly evaluate a checkify.check"):
        plax.jit(lambda x: checkify.check(x > 0, "staged"))(1.0)
    checkify.debug_check(jnp.bool_(False), "ignored outside checkify")


def test_bad_arguments():
    with pytest.raises(TypeError, match="PyTrees of arrays, but got 3"):
        checkify.check(jnp.bool_(True), "{}", 3)
    with pytest.raises(TypeError, match="scalar boolean pred"):
        checkify.check(jnp.ones(2) > 0, "not scalar")
    with pytest.raises(TypeError, match="scalar boolean pred"):
        checkify.check("yes", "not an array")
    with pytest.raises(TypeError, match="msg must be a str"):
        checkify.check(jnp.bool_(True), 5)
    with pytest.raises(ValueError, match="errors must be a set of the error categories"):
        checkify.checkify(_positive, errors={ValueError})
    with pytest.raises(TypeError, match="checkify"):
        checkify.checkify(3)
    with pytest.raises(TypeError, match="check_error takes a checkify Error"):
        checkify.check_error("error")


def test_checks_survive_jit_caches_and_dce():
    inner = plax.jit(_positive)
    err, _ = checkify.checkify(lambda x: inner(x) * 0)(jnp.float32(-1.0))
    assert err.get() == "need positive, got -1.0 (`check` failed)"
    with pytest.raises(ValueError, match="not functionalized"):
        inner(jnp.float32(-1.0))  # its checkify trace is not reused outside checkify
    np.testing.assert_allclose(plax.jit(lambda x: jnp.sqrt(x))(4.0), 2.0)
