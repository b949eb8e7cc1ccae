"""`jax_debug_key_reuse`: a typed key consumed twice raises KeyReuseError, eagerly and
when a jitted function is traced. The known answers are JAX 0.10.2's for the same
programs; `test_the_cases_behave_as_in_jax` runs them under JAX in a subprocess."""
import numpy as np
import pytest
from jax_differential import requires_jax, run_body, run_in_jax

import plax
from plax import lax, random
from plax.errors import KeyReuseError
from plax.extend.core import Primitive, ShapedArray
from plax.extend.random import (
    Forward,
    KeyReuseSignature,
    Sink,
    Source,
    check_key_reuse_jaxpr,
    jaxpr_signature,
    register_key_reuse_signature,
)

# Each case is a function of no arguments run with the option on; `results[name]` is
# "OK" or the exception's class and the start of its message (up to where plax adds
# where the key was consumed, or JAX its signatures).
CASES = """
random = lib.random
P = lib.sharding.PartitionSpec
k = lambda: random.key(0)
cases = {}

def case(fn):
    cases[fn.__name__] = fn
    return fn

@case
def normal_twice():
    key = k(); random.normal(key); random.normal(key)

@case
def split_then_normal():
    key = k(); random.split(key); random.normal(key)

@case
def bits_twice():
    key = k(); random.bits(key); random.bits(key)

@case
def fold_in_key_data_clone_do_not_consume():
    key = k(); random.fold_in(key, 1); random.fold_in(key, 2); random.key_data(key)
    random.normal(key); random.fold_in(key, 3); random.key_data(key)
    random.normal(random.clone(key))

@case
def a_clone_is_consumed_by_use():
    key = k(); random.normal(key); c = random.clone(key); random.normal(c); random.normal(c)

@case
def raw_keys_are_not_checked():
    key = random.PRNGKey(0); random.normal(key); random.normal(key)

@case
def rewrapped_data_is_fresh():
    key = k(); random.normal(key); random.normal(random.wrap_key_data(random.key_data(key)))

@case
def indexing_consumes_that_key():
    keys = random.split(k(), 3); random.normal(keys[0]); random.normal(keys[1])
    random.normal(keys[0])

@case
def slices_consume_their_part():
    keys = random.split(k(), 4); lib.vmap(random.normal)(keys[:2])
    lib.vmap(random.normal)(keys[2:]); lib.vmap(random.normal)(keys[1:3])

@case
def unpacked_keys():
    k1, k2 = random.split(k()); random.normal(k1); random.normal(k2); random.normal(k1)

@case
def samplers_share_the_rule():
    key = k(); random.uniform(key); random.randint(key, (), 0, 3)

@case
def permutation_then_choice():
    key = k(); random.permutation(key, 3); random.choice(key, 3)

@case
def jit_body_reuses():
    lib.jit(lambda key: random.normal(key) + random.normal(key))(k())

@case
def jit_call_consumes():
    key = k(); f = lib.jit(lambda key: random.normal(key)); f(key); f(key)

@case
def jit_then_eager():
    key = k(); lib.jit(lambda key: random.normal(key))(key); random.normal(key)

@case
def jit_forwards_consumed_state():
    key = k(); random.normal(key); out = lib.jit(lambda key: key)(key); random.normal(out)

@case
def jit_forward_is_a_copy_eagerly():
    key = k(); out = lib.jit(lambda key: key)(key); random.normal(out); random.normal(key)

@case
def jit_returns_what_it_consumed():
    key = k(); out = lib.jit(lambda key: (key, random.normal(key)))(key); random.normal(out[0])

@case
def jit_split_outputs_are_fresh():
    out = lib.jit(random.split)(k()); random.normal(out[0]); random.normal(out[1])

@case
def jit_key_data_does_not_consume():
    key = k(); lib.jit(random.key_data)(key); random.normal(key)

@case
def jit_closed_over_key():
    key = k(); f = lib.jit(lambda x: x + random.normal(key)); f(1.0); f(2.0)

@case
def jit_partial_consumption_other_part():
    keys = random.split(k(), 4); lib.jit(lambda ks: random.normal(ks[0]))(keys)
    lib.vmap(random.normal)(keys[2:])

@case
def jit_partial_consumption_same_part():
    keys = random.split(k(), 4); lib.jit(lambda ks: random.normal(ks[0]))(keys)
    lib.vmap(random.normal)(keys[:2])

@case
def jit_distinct_indices():
    lib.jit(lambda ks: (random.normal(ks[0]), random.normal(ks[1])))(random.split(k(), 2))

@case
def jit_same_index():
    lib.jit(lambda ks: (random.normal(ks[0]), random.normal(ks[0])))(random.split(k(), 2))

@case
def jit_iteration():
    lib.jit(lambda ks: [random.normal(x) for x in ks])(random.split(k(), 2))

@case
def cond_forwards():
    f = lambda key, p: random.normal(lax.cond(p, lambda k: k, lambda k: k, key))
    lib.jit(f)(k(), True)

@case
def cond_one_branch_then_reuse():
    def f(key, p):
        return lax.cond(p, random.normal, lambda k: 0.0, key) + random.normal(key)
    lib.jit(f)(k(), True)

@case
def cond_on_a_consumed_key():
    key = k(); random.normal(key)
    f = lambda p, key: lax.cond(p, lambda k: k, lambda k: random.split(k)[0], key)
    lib.jit(f)(True, key)

@case
def cond_sources_fresh_keys():
    f = lambda p, key: lax.cond(p, lambda k: random.split(k)[1], lambda k: random.split(k)[0],
                                key)
    out = lib.jit(f)(True, k()); random.normal(out); random.normal(out)

@case
def while_consumes_its_carry():
    body = lambda c: (c[0], c[1] + random.normal(c[0]))
    lib.jit(lambda key: lax.while_loop(lambda c: c[1] < 3, body, (key, 0.0)))(k())

@case
def while_splits_its_carry():
    def body(c):
        k1, k2 = random.split(c[0]); return k1, c[1] + random.normal(k2)
    lib.jit(lambda key: lax.while_loop(lambda c: c[1] < 3, body, (key, 0.0)))(k())

@case
def while_cond_and_body_share_a_key():
    cond = lambda c: random.bits(c[0]) < 5
    body = lambda c: (random.split(c[0])[0], c[1])
    lib.jit(lambda key: lax.while_loop(cond, body, (key, 0)))(k())

@case
def fori_loop_reuses_a_constant():
    lib.jit(lambda key: lax.fori_loop(0, 3, lambda i, c: c + random.normal(key), 0.0))(k())

@case
def fori_loop_folds_in_the_index():
    body = lambda i, c: c + random.normal(random.fold_in(key, i))
    key = k(); lib.jit(lambda: lax.fori_loop(0, 3, body, 0.0))()

@case
def scan_splits_its_carry():
    def body(c, x):
        k1, k2 = random.split(c); return k1, random.normal(k2)
    lib.jit(lambda key: lax.scan(body, key, None, length=3))(k())

@case
def scan_over_keys():
    f = lambda keys: lax.scan(lambda c, key: (c + random.normal(key), None), 0.0, keys)
    lib.jit(f)(random.split(k(), 3))

@case
def vmap_twice():
    keys = random.split(k(), 3); lib.vmap(random.normal)(keys); lib.vmap(random.normal)(keys)

@case
def vmap_body_reuses():
    lib.vmap(lambda key: random.normal(key) + random.normal(key))(random.split(k(), 3))

@case
def vmap_of_split():
    keys = lib.vmap(random.split)(random.split(k(), 3))
    lib.vmap(lib.vmap(random.normal))(keys)

@case
def grad_twice():
    g = lib.grad(lambda x, key: x * random.normal(key)); key = k(); g(1.0, key); g(1.0, key)

@case
def grad_body_reuses():
    lib.grad(lambda x, key: x * random.normal(key) * random.normal(key))(1.0, k())

@lib.custom_jvp
def scaled(x, key):
    return x * random.normal(key)
scaled.defjvp(lambda p, t: (scaled(*p), t[0]))

@lib.custom_vjp
def scaled_vjp(x, key):
    return x * random.normal(key)
scaled_vjp.defvjp(lambda x, key: (scaled_vjp(x, key), None), lambda r, c: (c, None))

@case
def custom_jvp_consumes():
    key = k(); lib.jit(scaled)(1.0, key); random.normal(key)

@case
def custom_jvp_then_reuse():
    lib.jit(lambda x, key: scaled(x, key) + random.normal(key))(1.0, k())

@case
def custom_vjp_then_reuse():
    lib.jit(lambda x, key: scaled_vjp(x, key) + random.normal(key))(1.0, k())

@case
def grad_of_custom_vjp_consumes():
    key = k(); lib.grad(lambda x: scaled_vjp(x, key))(1.0); random.normal(key)

@case
def checkpoint_then_reuse():
    f = lambda x, key: lib.checkpoint(lambda x: x * random.normal(key))(x) + random.normal(key)
    lib.jit(f)(1.0, k())

@case
def grad_of_checkpoint():
    f = lambda x, key: lib.checkpoint(lambda x, key: x * random.normal(key))(x, key)
    lib.jit(lib.grad(f))(1.0, k())

@case
def eager_cond_consumes():
    key = k(); lax.cond(True, random.normal, lambda k: 0.0, key); random.normal(key)

@case
def eager_while_loop():
    def body(c):
        k1, k2 = random.split(c[0]); return k1, c[1] + random.normal(k2)
    key = k(); out = lax.while_loop(lambda c: c[1] < 3, body, (key, 0.0))
    random.normal(out[0]); random.normal(key)

@case
def jit_static_and_keyword_arguments():
    key = k(); f = lib.jit(lambda x, k: random.normal(k) * x, static_argnums=0)
    f(2, k=key); random.bits(key)

def _smap(f):
    mesh = lib.make_mesh((1,), ("x",))
    return lib.shard_map(f, mesh=mesh, in_specs=P(), out_specs=P())

@case
def shard_map_then_reuse():
    sm = _smap(random.bits)
    lib.jit(lambda key: sm(key) + random.bits(key))(k())

@case
def shard_map_body_reuses():
    lib.jit(_smap(lambda key: random.bits(key) + random.bits(key)))(k())

def outcome(fn):
    try:
        fn()
    except Exception as err:
        msg = str(err)
        cut = min([i for i in (msg.find(s) for s in (";", " (at ", ":", ", because", "\\n"))
                   if i >= 0] or [len(msg)])
        return f"{type(err).__name__}: {msg[:cut]}"
    return "OK"

with lib.debug_key_reuse(True):
    for name, fn in cases.items():
        results[name] = np.asarray(outcome(fn))
"""

_REUSED = "KeyReuseError: Previously-consumed key passed to jit-compiled function at index 0"
_SLICED = "KeyReuseError: Previously-consumed key passed to slice at index 0"
_IN_JIT = "KeyReuseError: In jit, argument 0 is already consumed."
_IN_BITS = "KeyReuseError: In random_bits, argument 0 is already consumed."
EXPECTED = {  # JAX 0.10.2's outcomes
    "normal_twice": _REUSED, "split_then_normal": _REUSED,
    "bits_twice": "KeyReuseError: Previously-consumed key passed to random_bits at index 0",
    "fold_in_key_data_clone_do_not_consume": "OK", "a_clone_is_consumed_by_use": _REUSED,
    "raw_keys_are_not_checked": "OK", "rewrapped_data_is_fresh": "OK",
    "indexing_consumes_that_key": _SLICED, "slices_consume_their_part": _SLICED,
    "unpacked_keys": _REUSED, "samplers_share_the_rule": _REUSED,
    "permutation_then_choice": _REUSED,
    "jit_body_reuses": _IN_JIT, "jit_call_consumes": _REUSED, "jit_then_eager": _REUSED,
    "jit_forwards_consumed_state": _REUSED, "jit_forward_is_a_copy_eagerly": "OK",
    "jit_returns_what_it_consumed": _REUSED, "jit_split_outputs_are_fresh": "OK",
    "jit_key_data_does_not_consume": "OK",
    "jit_closed_over_key": _REUSED.replace("index 0", "index 1"),
    "jit_partial_consumption_other_part": "OK", "jit_partial_consumption_same_part": _SLICED,
    "jit_distinct_indices": "OK",
    "jit_same_index": "KeyReuseError: In slice, argument 0 is already consumed.",
    "jit_iteration": "OK",
    "cond_forwards": "OK", "cond_one_branch_then_reuse": _IN_JIT,
    "cond_on_a_consumed_key": _REUSED.replace("index 0", "index 1"),
    "cond_sources_fresh_keys": _REUSED,
    "while_consumes_its_carry": "KeyReuseError: while_loop body function leads to key reuse "
                                "when repeatedly executed",
    "while_splits_its_carry": "OK",
    "while_cond_and_body_share_a_key": "KeyReuseError: while_loop cond and body functions "
                                       "both use the same key",
    "fori_loop_reuses_a_constant": "KeyReuseError: scan body function leads to key reuse "
                                   "when repeatedly executed",
    "fori_loop_folds_in_the_index": "OK", "scan_splits_its_carry": "OK", "scan_over_keys": "OK",
    "vmap_twice": _REUSED, "vmap_body_reuses": _REUSED, "vmap_of_split": "OK",
    "grad_twice": _REUSED, "grad_body_reuses": _REUSED,
    "custom_jvp_consumes": _REUSED, "custom_jvp_then_reuse": _IN_JIT,
    "custom_vjp_then_reuse": _IN_JIT, "grad_of_custom_vjp_consumes": _REUSED,
    "checkpoint_then_reuse": _IN_JIT, "grad_of_checkpoint": "OK",
    "eager_cond_consumes": _REUSED, "eager_while_loop": _REUSED,
    "jit_static_and_keyword_arguments": "KeyReuseError: Previously-consumed key passed to "
                                        "random_bits at index 0",
    "shard_map_then_reuse": _IN_BITS, "shard_map_body_reuses": _IN_BITS,
}


@pytest.fixture(scope="module")
def outcomes():
    return {name: str(value) for name, value in run_body(CASES, {}).items()}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_known_answers(outcomes, name):
    assert outcomes[name] == EXPECTED[name]


def test_every_case_has_a_known_answer(outcomes):
    assert sorted(outcomes) == sorted(EXPECTED)


@requires_jax
def test_the_cases_behave_as_in_jax(outcomes):
    theirs = {name: str(value) for name, value in run_in_jax(CASES, {}).items()}
    assert theirs == outcomes


@pytest.fixture
def checking():
    with plax.debug_key_reuse(True):
        yield


def test_off_by_default_nothing_is_checked():
    assert plax.config.jax_debug_key_reuse is False
    key = random.key(0)
    a, b = random.normal(key), random.normal(key)
    assert a == b
    assert plax.jit(lambda k: random.normal(k) - random.normal(k))(key) == 0


def test_the_error_says_where_the_key_was_consumed(checking):
    key = random.key(0)
    random.normal(key)  # consumed here
    with pytest.raises(KeyReuseError, match=r"consumed at .*test_key_reuse.py:\d+"):
        random.uniform(key)
    assert issubclass(KeyReuseError, TypeError)  # a JAXTypeError, as in JAX


def test_a_jaxpr_error_names_the_line(checking):
    def f(key):
        return random.bits(key) + random.bits(key)
    with pytest.raises(KeyReuseError, match=r"In random_bits, argument 0 is already "
                                            r"consumed\. \(at .*test_key_reuse.py"):
        plax.jit(f)(random.key(1))


def test_cached_calls_keep_checking(checking):
    f = plax.jit(lambda k: random.bits(k))
    for seed in range(3):  # later calls come from the fast path's cache
        key = random.key(seed)
        f(key)
        with pytest.raises(KeyReuseError, match="jit-compiled function at index 0"):
            f(key)


def test_checked_calls_are_cached_apart_from_plain_ones():
    f = plax.jit(lambda k: random.bits(k))
    key = random.key(0)
    f(key), f(key)  # off: no tracking
    with plax.debug_key_reuse(True):
        f(key)  # the key's earlier uses were not recorded
        with pytest.raises(KeyReuseError):
            f(key)
    f(key)


def test_iterating_a_key_array_consumes_it(checking):
    # Stricter than JAX, whose eager iteration hands out the same keys unchecked each
    # time: plax iterates by one jitted unstack, which consumes the array (as iterating
    # under jit does in JAX too).
    keys = random.split(random.key(0), 2)
    k1, k2 = keys
    random.normal(k1), random.normal(k2)
    with pytest.raises(KeyReuseError, match="jit-compiled function at index 0"):
        list(keys)


def test_tracking_is_off_and_forgets_dropped_keys():
    from plax_transforms import key_reuse
    before = len(key_reuse._consumed)
    key = random.key(0)
    random.normal(key), random.split(key)
    assert len(key_reuse._consumed) == before  # off: nothing recorded
    with plax.debug_key_reuse(True):
        key = random.key(1)
        random.normal(key)
        assert id(key) in key_reuse._consumed
        del key
        assert len(key_reuse._consumed) == before


def _sig(f, *args):
    return jaxpr_signature(plax.make_jaxpr(f)(*args))


def test_signatures_of_functions():
    key, keys = random.key(0), random.split(random.key(0), 3)
    assert _sig(random.split, key) == KeyReuseSignature(Sink(0), Source(0))
    assert _sig(lambda k: k, key) == KeyReuseSignature(Forward(0, 0))
    assert _sig(lambda k: random.fold_in(k, 1), key) == KeyReuseSignature(Source(0))
    assert _sig(random.key_data, key) == KeyReuseSignature()
    assert _sig(lambda k: (random.bits(k), k), key) == KeyReuseSignature(Sink(0),
                                                                          Forward(0, 1))
    assert _sig(lambda ks: ks[1:], keys) == KeyReuseSignature(
        Sink(0, np.array([False, True, True])), Source(0))
    assert repr(_sig(lambda ks: ks[0], keys)) == \
        "KeyReuseSignature(Sink(0, [ True False False]), Source(0))"
    # the raw-key functions: uint32 data in and out, nothing to track
    assert _sig(lambda k: random.split(k), random.PRNGKey(0)) == KeyReuseSignature()


def test_a_while_loop_s_signature_is_over_its_operands(checking):
    # Operands are (cond constants, body constants, carry); JAX 0.10.2 reports the
    # body's signature unshifted, so it misses this reuse when cond has a constant.
    def loop(key, limit):
        def body(c):
            k1, k2 = random.split(c[0])
            return k1, c[1] + random.normal(k2)
        return lax.while_loop(lambda c: c[1] < limit, body, (key, 0.0))
    assert _sig(loop, random.key(0), 3.0) == KeyReuseSignature(Sink(0), Source(0))
    with pytest.raises(KeyReuseError, match="In jit, argument 0 is already consumed"):
        plax.jit(lambda k, limit: (loop(k, limit), random.normal(k)))(random.key(0), 3.0)


def test_masks_that_are_all_or_nothing_are_plain_booleans():
    assert Sink(0, np.ones(3, bool)) == Sink(0)
    assert Sink(0, np.zeros(0, bool)).mask is False
    with pytest.raises(AttributeError, match="immutable"):
        Sink(0).idx = 1
    with pytest.raises(TypeError, match="made of Sink, Source and Forward"):
        KeyReuseSignature(0)


# --- a third party's primitives declare their signatures ------------------------------

draw_p = Primitive("tests.key_reuse.draw")
draw_p.def_abstract_eval(lambda keys: ShapedArray(keys.shape, np.dtype(np.float32)))
peek_p = Primitive("tests.key_reuse.peek")
peek_p.def_abstract_eval(lambda keys: ShapedArray(keys.shape, np.dtype(np.uint32)))
refresh_p = Primitive("tests.key_reuse.refresh")
refresh_p.def_abstract_eval(lambda keys: keys)
register_key_reuse_signature(draw_p, KeyReuseSignature(Sink(0)))
register_key_reuse_signature(refresh_p, lambda eqn: KeyReuseSignature(Source(0)))


def _check(f, *args):
    check_key_reuse_jaxpr(plax.make_jaxpr(f)(*args))


def test_a_third_party_primitive_declares_its_signature(checking):
    key = random.key(0)
    _check(lambda k: draw_p.bind(refresh_p.bind(k)) + draw_p.bind(refresh_p.bind(k)), key)
    with pytest.raises(KeyReuseError, match="In draw, argument 0 is already consumed"):
        _check(lambda k: draw_p.bind(k) + draw_p.bind(k), key)
    with pytest.raises(KeyReuseError, match="In draw, argument 0 is already consumed"):
        plax.jit(lambda k: random.normal(k) + draw_p.bind(k)).trace(key)
    # undeclared: consumes every key it takes
    with pytest.raises(KeyReuseError, match="In peek, argument 0 is already consumed"):
        _check(lambda k: (peek_p.bind(k), peek_p.bind(k)), key)


def test_bad_declarations():
    with pytest.raises(ValueError, match="already has a key reuse signature"):
        register_key_reuse_signature(draw_p, KeyReuseSignature())
    register_key_reuse_signature(draw_p, KeyReuseSignature(Sink(0)))  # the same: fine
    with pytest.raises(TypeError, match="expected a KeyReuseSignature"):
        register_key_reuse_signature("tests.key_reuse.other", (Sink(0),))
    bad_p = Primitive("tests.key_reuse.bad")
    bad_p.def_abstract_eval(lambda keys: keys)
    register_key_reuse_signature(bad_p, KeyReuseSignature(Sink(3)))
    with pytest.raises(KeyReuseError, match=r"In bad, sink 3 out of range \[0, 1\)"):
        _check(bad_p.bind, random.key(0))
    register_key_reuse_signature(bad_p, KeyReuseSignature(Forward(0, 0)), override=True)
    _check(lambda k: random.bits(bad_p.bind(k)), random.key(0))
    with pytest.raises(KeyReuseError, match="In random_bits, argument 0 is already consumed"):
        _check(lambda k: (random.bits(bad_p.bind(k)), random.bits(k)), random.key(0))
