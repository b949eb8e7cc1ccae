"""Key-reuse signatures of primitives, and the static analysis of Jaxprs built on them.

Under `jax_debug_key_reuse`, a typed key may feed one consuming operation. What an
operation does to the keys it meets is its *signature*: which inputs it consumes
(`Sink`, with a mask for a part of a key array), which outputs are fresh keys
(`Source`) and which outputs are an input passed through (`Forward`: consuming
the output consumes the input). `jaxpr_signature` walks a Jaxpr, raises
`KeyReuseError` where a key is consumed twice, and sums the Jaxpr up as one
signature, so that a call of it (`jit`, `shard_map`, `custom_jvp`...) is an
operation like any other; `cond`, `while` and `scan` add the checks a loop needs.

Signatures are kept here, keyed by primitive id, rather than as a new kind of rule
in each primitive's table: rule kinds are what the kernel's interpreters run, and
the kernel knows nothing of keys; one table can name primitives of every layer
(`plax.jit`, `sharding.shard_map`) without importing them, as the sharding rules
do; and this module imports nothing of `plax.random`, so `plax_transforms` can use
it while `plax.random`'s jitted samplers are still being defined. A third party
declares its primitive's signature with `register_key_reuse_signature` (public as
`plax.extend.random`). An unregistered primitive consumes every key it is given,
unless it is a call of a Jaxpr (a `jaxpr`/`call_jaxpr` param mapping inputs and
outputs one to one), which is analysed through that Jaxpr.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import NamedTuple, Union

import numpy as np

from plax.errors import KeyReuseError
from plax.extend import dtypes
from plax.extend.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Primitive, user_frame

Mask = Union[bool, np.ndarray]


def normalize_mask(mask) -> Mask:
    """`mask` as True/False when uniform, else a read-only boolean array."""
    mask = np.asarray(mask, dtype=bool)
    if mask.size == 0 or not mask.any():
        return False
    if mask.all():
        return True
    mask = mask.copy()
    mask.flags.writeable = False
    return mask


class _Port:
    """An input (`Sink`) or output (`Source`) of an operation, with the part of its key
    array that it concerns (`mask`: True for all of it)."""
    __slots__ = ("idx", "mask")

    def __init__(self, idx: int, mask: Mask = True):
        object.__setattr__(self, "idx", int(idx))
        object.__setattr__(self, "mask", normalize_mask(mask))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _key(self) -> tuple:
        mask = self.mask
        return (type(self).__name__, self.idx,
                mask if isinstance(mask, bool) else (mask.shape, mask.tobytes()))

    def __eq__(self, other) -> bool:
        return isinstance(other, _Port) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        mask = "" if self.mask is True else f", {self.mask}"
        return f"{type(self).__name__}({self.idx}{mask})"


class Sink(_Port):
    """Input `idx` is consumed (where `mask` is True)."""


class Source(_Port):
    """Output `idx` is a fresh, unconsumed key array (where `mask` is True)."""


class Forward(NamedTuple):
    """Output `out_idx` is input `in_idx` passed through: the same keys."""
    in_idx: int
    out_idx: int

    def __repr__(self) -> str:
        return f"Forward({self.in_idx}, {self.out_idx})"


class KeyReuseSignature:
    """What one operation does to the keys it takes and gives: a set of `Sink`,
    `Source` and `Forward`."""
    __slots__ = ("_parts",)

    def __init__(self, *parts: Sink | Source | Forward):
        for part in parts:
            if not isinstance(part, (Sink, Source, Forward)):
                raise TypeError(f"a KeyReuseSignature is made of Sink, Source and Forward, "
                                f"got {part!r}")
        self._parts = frozenset(parts)

    @property
    def sinks(self) -> list[Sink]:
        return [p for p in self._parts if isinstance(p, Sink)]

    @property
    def sources(self) -> list[Source]:
        return [p for p in self._parts if isinstance(p, Source)]

    @property
    def forwards(self) -> list[Forward]:
        return [p for p in self._parts if isinstance(p, Forward)]

    def __eq__(self, other) -> bool:
        return isinstance(other, KeyReuseSignature) and self._parts == other._parts

    def __hash__(self) -> int:
        return hash(self._parts)

    def __repr__(self) -> str:
        order = {Sink: 0, Source: 1, Forward: 2}
        parts = sorted(self._parts, key=lambda p: (order[type(p)], tuple(p)
                                                   if isinstance(p, Forward) else p.idx))
        return f"KeyReuseSignature({', '.join(map(repr, parts))})"


SignatureRule = Callable[[JaxprEqn], KeyReuseSignature]
_signatures: dict[str, KeyReuseSignature | SignatureRule] = {}


def register_key_reuse_signature(primitive: Primitive | str,
                                 signature: KeyReuseSignature | SignatureRule, *,
                                 override: bool = False) -> None:
    """Declare what `primitive` (or the primitive with this id) does to keys: a fixed
    `KeyReuseSignature`, or a function of the equation that returns one (for
    signatures that depend on parameters or on sub-Jaxprs, which it can analyse with
    `jaxpr_signature`)."""
    prim_id = primitive if isinstance(primitive, str) else primitive.id
    if not isinstance(signature, KeyReuseSignature) and not callable(signature):
        raise TypeError(f"register_key_reuse_signature of {prim_id!r}: expected a "
                        f"KeyReuseSignature or a function of the equation, got {signature!r}")
    old = _signatures.get(prim_id)
    if old is not None and old != signature and not override:
        raise ValueError(f"primitive {prim_id!r} already has a key reuse signature ({old!r}); "
                         "pass override=True to replace it")
    _signatures[prim_id] = signature


def is_key_dtype(dtype) -> bool:
    """Whether `dtype` is that of typed PRNG keys (an extended dtype under prng_key)."""
    return isinstance(dtype, dtypes.ExtendedDType) and dtypes.issubdtype(dtype, dtypes.prng_key)


def is_key(atom) -> bool:
    """Whether a Jaxpr variable (or literal) holds typed keys."""
    return is_key_dtype(getattr(getattr(atom, "aval", None), "dtype", None))


def _call_jaxpr(eqn: JaxprEqn) -> Jaxpr | None:
    """The Jaxpr of a call-like equation (inputs and outputs one for one), else None."""
    for name in ("jaxpr", "call_jaxpr"):
        sub = eqn.params.get(name)
        if isinstance(sub, ClosedJaxpr):
            sub = sub.jaxpr
        if (isinstance(sub, Jaxpr) and len(sub.invars) == len(eqn.invars)
                and len(sub.outvars) == len(eqn.outvars)):
            return sub
    return None


def registered_signature(eqn: JaxprEqn) -> KeyReuseSignature | None:
    """The declared signature of `eqn`, that of the Jaxpr it calls, or None."""
    sig = _signatures.get(eqn.primitive.id)
    if sig is not None:
        if not isinstance(sig, KeyReuseSignature):
            sig = sig(eqn)
        _check_ports(eqn, sig)
        return sig
    sub = _call_jaxpr(eqn)
    return None if sub is None else jaxpr_signature(sub)


def eqn_signature(eqn: JaxprEqn) -> KeyReuseSignature:
    """The signature of `eqn`; undeclared primitives consume every key they take."""
    sig = registered_signature(eqn)
    if sig is None:
        sig = KeyReuseSignature(*(Sink(i) for i, v in enumerate(eqn.invars) if is_key(v)))
    return sig


_jaxpr_signatures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jaxpr_signature(jaxpr: Jaxpr | ClosedJaxpr) -> KeyReuseSignature:
    """The signature of a Jaxpr, over its invars followed by its constvars; raises
    KeyReuseError where the Jaxpr consumes a key twice."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    sig = _jaxpr_signatures.get(jaxpr)
    if sig is None:
        sig = _jaxpr_signatures[jaxpr] = _analyse(jaxpr)
    return sig


def _analyse(jaxpr: Jaxpr) -> KeyReuseSignature:
    consumed: dict = {}  # var -> Mask (absent: fresh)
    alias: dict = {}     # a forwarded output -> the var whose keys it is

    def root(var):
        while var in alias:
            var = alias[var]
        return var

    for eqn in jaxpr.eqns:
        sig = eqn_signature(eqn)
        for fwd in sig.forwards:
            src = eqn.invars[fwd.in_idx]
            if not isinstance(src, Literal) and is_key(src):
                alias[eqn.outvars[fwd.out_idx]] = root(src)
        for sink in sig.sinks:
            var = eqn.invars[sink.idx]
            if isinstance(var, Literal) or not is_key(var):
                continue
            var = root(var)
            before = consumed.get(var, False)
            if np.any(np.logical_and(before, sink.mask)):
                raise KeyReuseError(f"In {eqn.primitive}, argument {sink.idx} is already "
                                    f"consumed.{_where(eqn)}")
            consumed[var] = normalize_mask(np.logical_or(before, sink.mask))
        sourced = {s.idx: s.mask for s in sig.sources}
        for i, var in enumerate(eqn.outvars):
            if var not in alias and is_key(var):
                consumed[var] = normalize_mask(np.logical_not(sourced[i])) if i in sourced else True

    inputs = [*jaxpr.invars, *jaxpr.constvars]
    position = {var: i for i, var in enumerate(inputs)}
    parts: list = [Sink(i, consumed[v]) for i, v in enumerate(inputs)
                   if is_key(v) and np.any(consumed.get(v, False))]
    for j, out in enumerate(jaxpr.outvars):
        if isinstance(out, Literal) or not is_key(out):
            continue
        var = root(out)
        if var in position:
            parts.append(Forward(position[var], j))
        elif not np.all(consumed.get(var, False)):
            parts.append(Source(j, np.logical_not(consumed.get(var, False))))
    return KeyReuseSignature(*parts)


def _check_ports(eqn: JaxprEqn, sig: KeyReuseSignature) -> None:
    n_in, n_out = len(eqn.invars), len(eqn.outvars)
    ports = [*((s.idx, n_in, "sink") for s in sig.sinks),
             *((s.idx, n_out, "source") for s in sig.sources),
             *((f.in_idx, n_in, "forward from") for f in sig.forwards),
             *((f.out_idx, n_out, "forward to") for f in sig.forwards)]
    for idx, n, side in ports:
        if not 0 <= idx < n:
            raise KeyReuseError(f"In {eqn.primitive}, {side} {idx} out of range "
                                f"[0, {n}) of its key reuse signature {sig!r}")


def _where(eqn: JaxprEqn) -> str:
    """` (at file:line:column (function))`: where the user applied the equation, if known."""
    frame = user_frame(eqn.source_info)
    return f" (at {frame})" if frame else ""


def check_key_reuse_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Raise KeyReuseError if `jaxpr` consumes a key twice."""
    jaxpr_signature(jaxpr)


# --- the standard primitives ------------------------------------------------------------

_FORWARD = KeyReuseSignature(Forward(0, 0))
_NOTHING = KeyReuseSignature()

for _id in ("lax.broadcast_in_dim", "lax.copy", "lax.convert_element_type", "lax.reshape",
            "lax.squeeze", "lax.stage", "lax.dynamic_slice", "lax.gather",
            "sharding.sharding_constraint"):
    register_key_reuse_signature(_id, _FORWARD)
for _id in ("lax.eq", "lax.ne", "random.random_unwrap", "debug.debug_callback"):
    register_key_reuse_signature(_id, _NOTHING)  # comparing, reading or printing keys
for _id in ("random.random_clone", "random.random_fold_in", "random.random_seed",
            "random.random_wrap"):
    register_key_reuse_signature(_id, KeyReuseSignature(Source(0)))
for _id in ("random.random_bits", "random.random_gamma"):
    register_key_reuse_signature(_id, KeyReuseSignature(Sink(0)))
register_key_reuse_signature("random.random_split", KeyReuseSignature(Sink(0), Source(0)))
register_key_reuse_signature("lax.dynamic_update_slice", KeyReuseSignature(Sink(1),
                                                                           Forward(0, 0)))
register_key_reuse_signature("lax.scatter", KeyReuseSignature(Sink(2), Forward(0, 0)))


def _slice_signature(eqn: JaxprEqn) -> KeyReuseSignature:
    """A slice consumes the part of the key array it takes and gives fresh keys."""
    aval = eqn.invars[0].aval
    if not is_key(eqn.invars[0]):
        return _FORWARD
    strides = eqn.params["strides"] or (1,) * aval.ndim
    taken = np.zeros(aval.shape, dtype=bool)
    taken[tuple(map(slice, eqn.params["start_indices"], eqn.params["limit_indices"],
                    strides))] = True
    return KeyReuseSignature(Sink(0, taken), Source(0))


def _concatenate_signature(eqn: JaxprEqn) -> KeyReuseSignature:
    if len(eqn.invars) == 1:
        return _FORWARD
    return KeyReuseSignature(*(Sink(i) for i in range(len(eqn.invars))), Source(0))


def _device_put_signature(eqn: JaxprEqn) -> KeyReuseSignature:
    return KeyReuseSignature(*(Forward(i, i) for i in range(len(eqn.invars))))


def _checkpoint_signature(eqn: JaxprEqn) -> KeyReuseSignature:
    # The differentiated (backward) copy recomputes what the forward one consumed.
    return _NOTHING if eqn.params.get("differentiated") else jaxpr_signature(eqn.params["jaxpr"])


def _cond_signature(eqn: JaxprEqn) -> KeyReuseSignature:
    """Consumes what any branch consumes; an output is fresh if every branch makes it
    fresh, and forwards an input if every branch forwards it or makes it fresh."""
    sigs = [jaxpr_signature(branch) for branch in eqn.params["branches"]]
    sinks: dict[int, Mask] = {}
    for sig in sigs:
        for s in sig.sinks:
            sinks[s.idx] = normalize_mask(np.logical_or(sinks.get(s.idx, False), s.mask))
    parts: list = [Sink(i + 1, m) for i, m in sinks.items()]  # operand 0 is the index
    for j in range(len(eqn.outvars)):
        sources = [next((s.mask for s in sig.sources if s.idx == j), None) for sig in sigs]
        forwards = {f.in_idx for sig in sigs for f in sig.forwards if f.out_idx == j}
        if all(m is not None for m in sources):
            parts.append(Source(j, np.logical_and.reduce([np.asarray(m) for m in sources])))
        elif len(forwards) == 1 and all(
                m is not None or any(f.out_idx == j for f in sig.forwards)
                for sig, m in zip(sigs, sources)):
            parts.append(Forward(forwards.pop() + 1, j))
    return KeyReuseSignature(*parts)


def _repeated_error(what: str, why: str, sig: KeyReuseSignature) -> KeyReuseError:
    return KeyReuseError(f"{what} function leads to key reuse when repeatedly executed, "
                         f"because {why}: its key reuse signature is {sig!r}")


def _consts_consumed(sig: KeyReuseSignature, nconsts: int) -> bool:
    return any(s.idx < nconsts and np.any(s.mask) for s in sig.sinks)


def _carry_sinks(sig: KeyReuseSignature, start: int, stop: int) -> set[int]:
    return {s.idx - start for s in sig.sinks if start <= s.idx < stop and np.any(s.mask)}


def _scan_signature(eqn: JaxprEqn) -> KeyReuseSignature:
    sig = jaxpr_signature(eqn.params["jaxpr"])
    nconsts, ncarry = eqn.params["num_consts"], eqn.params["num_carry"]
    if _consts_consumed(sig, nconsts):
        raise _repeated_error("scan body", "key constants are repeatedly consumed", sig)
    fresh = {s.idx for s in sig.sources if s.idx < ncarry}
    if not _carry_sinks(sig, nconsts, nconsts + ncarry) <= fresh:
        raise _repeated_error("scan body", "consumed inputs don't match sourced outputs", sig)
    return sig


def _while_signature(eqn: JaxprEqn) -> KeyReuseSignature:
    """Checks that neither function consumes a constant or a key carried to the next
    iteration without replacing it; the signature is the body's, over the while's
    operands (cond constants, body constants, carry)."""
    cond_sig = jaxpr_signature(eqn.params["cond_jaxpr"])
    body_sig = jaxpr_signature(eqn.params["body_jaxpr"])
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    if _consts_consumed(cond_sig, cn):
        raise _repeated_error("while_loop cond", "it consumes a key constant", cond_sig)
    if _consts_consumed(body_sig, bn):
        raise _repeated_error("while_loop body", "it consumes a key constant", body_sig)
    ncarry = len(eqn.outvars)
    fresh = {s.idx for s in body_sig.sources}
    cond_sinks = _carry_sinks(cond_sig, cn, cn + ncarry)
    body_sinks = _carry_sinks(body_sig, bn, bn + ncarry)
    if not cond_sinks <= fresh:
        raise _repeated_error("while_loop cond", "it consumes a carried key that the body "
                              "does not replace", cond_sig)
    if not body_sinks <= fresh:
        raise _repeated_error("while_loop body", "it consumes a carried key that it does "
                              "not replace", body_sig)
    if cond_sinks & body_sinks:
        raise KeyReuseError(f"while_loop cond and body functions both use the same key: "
                            f"{cond_sig!r} and {body_sig!r}")
    offset = cn  # body operand i is while operand cn + i; cond carry i is cn + bn + i
    return KeyReuseSignature(
        *(Sink(s.idx + offset, s.mask) for s in body_sig.sinks),
        *(Sink(s.idx + bn, s.mask) for s in cond_sig.sinks),  # carried keys only
        *body_sig.sources,
        *(Forward(f.in_idx + offset, f.out_idx) for f in body_sig.forwards
          if f.in_idx - bn == f.out_idx))


for _id, _rule in (("lax.slice", _slice_signature), ("lax.concatenate", _concatenate_signature),
                   ("plax.device_put", _device_put_signature),
                   ("plax.remat2", _checkpoint_signature), ("lax.cond", _cond_signature),
                   ("lax.scan", _scan_signature), ("lax.while", _while_signature)):
    register_key_reuse_signature(_id, _rule)
del _id, _rule

