"""`plax.ref` and `plax.new_ref`: mutable array references, eagerly, through jit
(passed in, closed over, created inside), in scan/fori_loop/while/cond bodies,
under grad and vmap of functions that create them, pytrees of references, and
JAX's errors; against NumPy and, in a subprocess, JAX."""
from __future__ import annotations

import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax
from jax_reference import run_reference

import plax
import plax.numpy as jnp
from plax import lax


def test_public_names():
    assert set(plax.ref.__all__) == {"AbstractRef", "Ref", "addupdate", "empty_ref",
                                     "free_ref", "freeze", "get", "new_ref", "set", "swap"}
    assert plax.new_ref is plax.ref.new_ref and plax.Ref is plax.ref.Ref
    for name in ("empty_ref", "free_ref", "freeze"):
        assert getattr(plax, name) is getattr(plax.ref, name)


def test_eager_reads_and_writes():
    r = plax.new_ref(np.arange(4.0, dtype=np.float32))
    assert isinstance(r, plax.Ref) and r.shape == (4,) and r.dtype == np.float32
    assert len(r) == 4 and repr(r) == "Ref([0., 1., 2., 3.], dtype=float32)"
    assert r.aval == plax.ref.AbstractRef(plax.ref.get(r).aval) and str(r.aval) == "Ref{float32[4]}"
    r[1] = 10.0
    r[2] += 5.0
    r[1:3] += np.ones(2, np.float32)
    np.testing.assert_array_equal(r[...], [0, 11, 8, 3])
    assert float(r[3]) == 3.0
    np.testing.assert_array_equal(plax.ref.swap(r, 0, 7.0), 0.0)
    plax.ref.set(r, None, np.full(4, 2.0, np.float32))
    plax.ref.addupdate(r, (), np.ones(4, np.float32))
    np.testing.assert_array_equal(plax.ref.get(r), [3, 3, 3, 3])
    np.testing.assert_array_equal(plax.freeze(r), [3, 3, 3, 3])
    i = jnp.asarray(2)
    r[i] = 9.0  # an array index
    np.testing.assert_array_equal(r[...], [3, 3, 9, 3])


def test_new_ref_copies_and_empty_ref():
    x = jnp.ones(2)
    r = plax.new_ref(x)
    r[0] = 5.0
    np.testing.assert_array_equal(x, [1, 1])
    e = plax.empty_ref(plax.ShapeDtypeStruct((2, 3), np.int32))
    assert e.shape == (2, 3) and e.dtype == np.int32
    plax.free_ref(e)


def test_bad_writes_and_arguments():
    r = plax.new_ref(jnp.zeros(3))
    with pytest.raises(ValueError, match=r"Invalid shape for `swap`. Ref shape: \(3,\). "
                                         r"Expected shape: \(3,\). Value shape: \(5,\)"):
        r[...] = jnp.ones(5)
    with pytest.raises(ValueError, match="Invalid dtype for `swap`. Ref dtype: float32. "
                                         "Value dtype: int32"):
        r[...] = jnp.ones(3, np.int32)
    with pytest.raises(ValueError, match="Invalid shape for `addupdate`"):
        plax.ref.addupdate(r, 0, jnp.ones(2))
    with pytest.raises(TypeError, match="unsupported operand"):
        r + 1
    with pytest.raises(TypeError, match="expects a mutable array reference"):
        plax.ref.get(jnp.ones(2))
    with pytest.raises(TypeError, match="slice bounds must be static"):
        plax.jit(lambda i: r[i:i + 1])(1)
    with pytest.raises(TypeError, match="not a reference"):
        plax.new_ref(r)
    with pytest.raises(ValueError, match=r"Out of bound indexer: idx=3, dim=3\."):
        r[3]
    with pytest.raises(ValueError, match=r"Out of bound indexer: idx=3, dim=3\."):
        plax.jit(lambda: r.__setitem__((..., 3), 1.0))()
    assert float(r[-1]) == float(r[2])  # negative ints count from the end
    with pytest.raises(TypeError, match="immutable"):
        plax.jit(lambda x: x.__setitem__(0, 1.0))(jnp.ones(2))


def test_jit_with_references_passed_in():
    @plax.jit
    def step(r, x):
        r[...] += x
        return r[...] * 2.0
    r = plax.new_ref(jnp.zeros(3))
    np.testing.assert_array_equal(step(r, 1.0), [2, 2, 2])
    np.testing.assert_array_equal(step(r, 1.0), [4, 4, 4])  # cached trace, fresh value
    np.testing.assert_array_equal(r[...], [2, 2, 2])
    other = plax.new_ref(jnp.full(3, 10.0))
    step(other, 1.0)
    np.testing.assert_array_equal(other[...], [11, 11, 11])
    np.testing.assert_array_equal(r[...], [2, 2, 2])
    jaxpr = str(plax.make_jaxpr(step)(r, 1.0))
    assert "Ref{f32[3]}" in jaxpr and "swap" in jaxpr
    assert step.eval_shape(r, 1.0).shape == (3,)


def test_a_traced_reference_is_an_instance_of_ref():
    """As JAX's `Ref`: `isinstance(x, plax.Ref)` holds for a reference's tracer too
    (inside jit, grad, vmap), not for a traced array (flax's nnx.jit tells the
    references among a function's outputs so)."""
    seen = []

    def f(r, x):
        seen.append((isinstance(r, plax.Ref), isinstance(x, plax.Ref)))
        r[...] += x
        return x * 2.0

    r = plax.new_ref(jnp.zeros(3))
    plax.jit(f)(r, jnp.ones(3))
    plax.grad(lambda x: f(plax.new_ref(jnp.zeros(3)), x).sum())(jnp.ones(3))
    plax.vmap(lambda x: f(plax.new_ref(jnp.zeros(3)), x))(jnp.ones((2, 3)))
    assert seen == [(True, False)] * 3
    assert not isinstance(jnp.zeros(3), plax.Ref) and not isinstance(3.0, plax.Ref)
    np.testing.assert_array_equal(r[...], [1, 1, 1])


def test_jit_with_closed_over_and_created_references():
    counter = plax.new_ref(jnp.zeros((), np.int32))

    @plax.jit
    def tick(x):
        counter[...] += 1
        local = plax.new_ref(x)
        local[0] = local[0] * 3.0
        return local[...]
    np.testing.assert_array_equal(tick(jnp.ones(2)), [3, 1])
    tick(jnp.ones(2))
    assert int(counter[...]) == 2
    np.testing.assert_array_equal(plax.jit(lambda: plax.jit(lambda: counter[...] + 1)())(), 3)


def test_pytrees_of_references():
    tree = {"a": plax.new_ref(jnp.ones(2)), "b": plax.new_ref(3.0)}
    got = plax.tree.map(plax.ref.get, tree)
    np.testing.assert_array_equal(got["a"], [1, 1])
    assert float(got["b"]) == 3.0

    @plax.jit
    def update(refs, x):
        plax.tree.map(lambda r: plax.ref.addupdate(r, ..., jnp.full(r.shape, x)), refs)
    update(tree, 2.0)
    np.testing.assert_array_equal(plax.tree.map(plax.ref.get, tree)["a"], [3, 3])
    assert float(tree["b"][...]) == 5.0


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_loops_and_branches_update_references(jitted):
    wrap = plax.jit if jitted else (lambda f: f)
    r = plax.new_ref(jnp.zeros(3))

    def fori_body(i, carry):
        r[i] += carry
        return carry + 1.0
    np.testing.assert_allclose(wrap(lambda: lax.fori_loop(0, 3, fori_body, 1.0))(), 4.0)
    np.testing.assert_array_equal(r[...], [1, 2, 3])

    def scan_body(carry, x):
        r[0] += x
        return carry + x, r[0]
    carry, ys = wrap(lambda: lax.scan(scan_body, 0.0, jnp.arange(3.0)))()
    np.testing.assert_array_equal(ys, [1, 2, 4])
    np.testing.assert_array_equal(r[...], [4, 2, 3])

    def while_cond(n):
        return r[1] < 10.0

    def while_body(n):
        r[1] = r[1] * 2.0
        return n + 1
    assert int(wrap(lambda: lax.while_loop(while_cond, while_body, 0))()) == 3
    np.testing.assert_array_equal(r[...], [4, 16, 3])

    def set_to(v):
        def branch():
            r[2] = v
        return branch
    wrap(lambda p: lax.cond(p, set_to(100.0), set_to(-1.0)))(False)
    np.testing.assert_array_equal(r[...], [4, 16, -1])
    wrap(lambda i: lax.switch(i, [set_to(0.0), set_to(5.0), set_to(7.0)]))(1)
    np.testing.assert_array_equal(r[...], [4, 16, 5])


def _accumulate(x):
    q = plax.new_ref(jnp.zeros(()))
    q[...] += x ** 2
    q[...] += jnp.sin(x)
    return q[...]


@pytest.mark.parametrize("how", ["grad", "jit_grad", "grad_jit"])
def test_grad_of_a_function_writing_a_reference_it_creates(how):
    fn = {"grad": plax.grad(_accumulate), "jit_grad": plax.jit(plax.grad(_accumulate)),
          "grad_jit": plax.grad(plax.jit(_accumulate))}[how]
    np.testing.assert_allclose(fn(1.0), 2.0 + np.cos(1.0), rtol=1e-6)


def test_vmap_and_jvp_of_functions_creating_references():
    xs = np.linspace(0.0, 1.0, 3, dtype=np.float32)
    np.testing.assert_allclose(plax.vmap(_accumulate)(xs), xs ** 2 + np.sin(xs), rtol=1e-6)
    _, t = plax.jvp(_accumulate, (0.5,), (1.0,))
    np.testing.assert_allclose(t, 1.0 + np.cos(0.5), rtol=1e-6)


def test_grad_and_vmap_through_loops_over_created_references():
    def f(x):
        q = plax.new_ref(jnp.zeros(3))

        def body(i, c):
            q[i] += x * i
            return c
        lax.fori_loop(0, 3, body, 0)
        return q[...]
    np.testing.assert_allclose(plax.grad(lambda x: f(x).sum())(2.0), 3.0)
    np.testing.assert_allclose(plax.jit(plax.grad(lambda x: f(x).sum()))(2.0), 3.0)
    np.testing.assert_allclose(plax.jit(f)(2.0), [0, 2, 4])
    np.testing.assert_allclose(plax.vmap(f)(jnp.arange(2.0)), [[0, 0, 0], [0, 1, 2]])


def test_escaping_and_aliased_references_raise():
    r = plax.new_ref(jnp.zeros(3))
    with pytest.raises(ValueError, match=r"(?s)returned a mutable array reference of type "
                                         r"Ref\{float32\[3\]\}, but.*passed in as the argument r"):
        plax.jit(lambda r: r)(r)
    with pytest.raises(ValueError, match=r"at output tree path result\[0\]"):
        plax.jit(lambda r: (r, 1.0))(r)
    with pytest.raises(ValueError, match=r"cannot be returned.*\n\n.*was created on line"):
        plax.jit(lambda x: plax.new_ref(x))(jnp.ones(2))
    with pytest.raises(ValueError, match="only one reference to a mutable array may be "
                                         "passed.*appeared at both a and b"):
        plax.jit(lambda a, b: a[...] + b[...])(r, r)


def test_writes_from_other_transformations_raise():
    r = plax.new_ref(jnp.zeros(3))
    with pytest.raises(Exception, match="differentiated value on a non-differentiated"):
        plax.grad(lambda x: (r.__setitem__(..., r[...] * x), r[...].sum())[1])(2.0)
    with pytest.raises(Exception, match="vmapped value on an unbatched array reference"):
        plax.vmap(lambda x: r.__setitem__(..., r[...] + x))(jnp.arange(3.0))
    # reading a closed-over reference under grad or vmap is fine
    r[...] = jnp.ones(3)
    np.testing.assert_allclose(plax.grad(lambda x: (r[...] * x).sum())(2.0), 3.0)
    np.testing.assert_allclose(plax.vmap(lambda i: r[i])(jnp.arange(3)), [1, 1, 1])


@requires_jax
def test_same_as_jax():
    assert_same_as_jax("""
        x = inputs["x"]
        r = lib.new_ref(jnp.zeros(3))

        @lib.jit
        def step(r, v):
            r[...] += v
            r[1] = r[1] * 3.0
            return r[...].sum()
        results["step"] = step(r, x[0])
        results["after"] = lib.freeze(r)
        q = lib.new_ref(jnp.ones(3))

        def body(i, c):
            q[i] += c
            return c * 2.0
        results["fori"] = lib.jit(lambda: lax.fori_loop(0, 3, body, x[1]))()
        results["q"] = q[...]

        def f(v):
            s = lib.new_ref(jnp.zeros(()))
            s[...] += v ** 3
            s[...] += jnp.cos(v)
            return s[...]
        results["grad"] = lib.vmap(lib.grad(f))(x)
    """, {"x": np.linspace(0.5, 2.0, 4, dtype=np.float32)})


def test_references_inside_checkpoint_and_custom_rules():
    r = plax.new_ref(jnp.zeros(()))

    @plax.checkpoint
    def remat_write(x):
        r[...] += x
        return x * 2.0
    np.testing.assert_allclose(plax.jit(remat_write)(3.0), 6.0)
    assert float(r[...]) == 3.0

    @plax.custom_jvp
    def f(x):
        r[...] += x
        return x
    f.defjvp(lambda p, t: (f(*p), t[0]))
    with pytest.raises(NotImplementedError, match="custom rule's function must not"):
        plax.jit(f)(1.0)


def test_int_and_unit_slice_writes_are_dynamic_update_slices():
    r = plax.new_ref(jnp.zeros((3, 4)))

    @plax.jit
    def write(i, v):
        r[i] = v
        r[-1, 1:3] += jnp.ones(2)
        return r[i]
    text = write.lower(1, jnp.arange(4.0)).as_text()
    assert "dynamic_update_slice" in text and "scatter" not in text
    want = np.zeros((3, 4), np.float32)
    for i in (1, 5, -1):  # an index past the end is clamped into bounds, as JAX writes
        k = min(i, 2) if i >= 0 else i + 3
        want[k] = np.arange(4.0)
        want[-1, 1:3] += 1.0
        np.testing.assert_array_equal(write(i, jnp.arange(4.0)), want[k])
    np.testing.assert_array_equal(r[...], want)
    r[..., ::2] = jnp.full((3, 2), 7.0)  # a strided slice: a scatter
    want[..., ::2] = 7.0
    np.testing.assert_array_equal(r[...], want)

    @plax.jit
    def window(i):
        r[plax.ds(i, 2), 1] += jnp.ones(2)
    assert "dynamic_update_slice" in window.lower(0).as_text()
    window(1)
    want[1:3, 1] += 1.0
    np.testing.assert_array_equal(r[...], want)


def test_views_read_and_write_the_reference():
    """`ref.at[idx]` is the part `idx` picks, used as a reference (eagerly and in jit)."""
    r = plax.new_ref(jnp.arange(6.0).reshape(2, 3))
    r.at[1][0] = 50.0
    assert r.at[1].shape == (3,) and r.at[1].dtype == np.float32
    np.testing.assert_array_equal(r.at[0][...], [0.0, 1.0, 2.0])

    @plax.jit
    def f(r):
        r.at[0][...] = r.at[1][...] * 2
        r.at[1].at[1:][...] += 1.0
    f(r)
    np.testing.assert_array_equal(r[...], [[100.0, 8.0, 10.0], [50.0, 5.0, 6.0]])


_PRINTED = """
result = [repr(jax.new_ref(0.)), repr(jax.new_ref(jnp.arange(12.0).reshape(3, 4) * 1000.5)),
          repr(jax.new_ref(jnp.int8(3))), repr(jax.new_ref(0.).aval)]
x_ref = jax.new_ref(0.)  # (what a write leaves depends on JAX's caches: not compared)

def err1(x_ref):
    x_ref[...] = 5.0
    return x_ref

def err3(y_ref):
    y_ref[...] = x_ref[...]

def err5(v):
    x_ref[...] = v

calls = [lambda: jax.jit(err1)(x_ref), lambda: jax.jit(lambda a, b: None)(x_ref, x_ref),
         lambda: jax.jit(err3)(x_ref), lambda: jax.vmap(err5)(jnp.arange(2.0)),
         lambda: jax.jvp(err5, (1.0,), (1.0,))]
for call in calls:
    try:
        call()
        result.append(None)
    except Exception as e:
        result.append([type(e).__name__, str(e).replace("<lambda>", "fun")])
"""


@requires_jax
def test_references_print_and_fail_as_jaxs():
    """A reference prints as its Array does (weak type included); errors name its type
    with the dtype spelled out, and closing over a reference passed as an argument
    too is JAX's error of its own."""
    mine = run_reference(_PRINTED, library="plax")
    assert mine[0] == "Ref(0., dtype=float32, weak_type=True)"
    assert mine == run_reference(_PRINTED)
