"""`jax.experimental.hijax`: what flax.nnx defines with it when imported.

JAX's "high-level" types (values with a pytree of low-level parts, lowered by
`to_lojax`) have no counterpart in plax. This module gives libraries what their
definitions need: `HiPrimitive` is a primitive whose methods are its rules
(`impl`, `abstract_eval`, `jvp`, `transpose`), registered in plax's table, so it
evaluates eagerly; the type classes, `aval_method`/`aval_property` descriptors,
`register_hitype` and the effect set record what they are told. A high-level value
cannot cross `jit`/`grad` (plax's lowering refuses its type). flax uses hijax only
for its hijax Variables (`flax_hijax_variable`, off by default).
"""
from __future__ import annotations

from plax.extend.ad import Zero, instantiate, is_undefined_primal  # noqa: F401
from plax.extend.core import EVAL_TRACE, AbstractValue, ShapedArray, current_trace  # noqa: F401

from plax_as_jax.overlay.extend.core import Primitive
from plax_as_jax.overlay.interpreters import ad

PLAX_MODULE = None
__plax_rule_helper__ = True

instantiate_zeros = ad.instantiate_zeros
_hitypes: dict[type, object] = {}


class HiPrimitive(Primitive):
    """A primitive defined by subclassing: its `impl`, `abstract_eval` (returning the
    output type and its effects), `jvp` and `transpose` methods are its rules."""

    def __init__(self, name: str):
        super().__init__(name)
        self.def_impl(self.impl)
        self.def_abstract_eval(lambda *avals, **params: self.abstract_eval(*avals, **params)[0])
        ad.primitive_jvps[self] = self.jvp
        ad.primitive_transposes[self] = self.transpose

    def is_high(self, *avals, **params) -> bool:
        return False

    def impl(self, *args, **params):
        raise NotImplementedError(f"{type(self).__name__} defines no impl")

    def abstract_eval(self, *avals, **params):
        raise NotImplementedError(f"{type(self).__name__} defines no abstract_eval")

    def jvp(self, primals, tangents, **params):
        raise NotImplementedError(f"{type(self).__name__} defines no jvp")

    def transpose(self, *args, **params):
        raise NotImplementedError(f"{type(self).__name__} defines no transpose")


class HiType(AbstractValue):
    """The type of a high-level value (immutable)."""
    is_high = True
    has_qdd = False


class MutableHiType(HiType):
    """The type of a mutable high-level value, whose type may change (its QDD)."""
    has_qdd = True
    is_writer = False


class AvalQDD:
    """A type with its quasi-dynamic data (what a mutable value holds now)."""
    is_high = True
    has_qdd = True

    def __init__(self, aval, qdd):
        self.aval, self.qdd = aval, qdd


class AvalMutableQDD:
    def __init__(self, aval, mutable_qdd):
        self.aval, self.mutable_qdd = aval, mutable_qdd


class aval_method:
    """A method of a value's type that its tracers expose, bound to the value."""

    def __init__(self, fun):
        self.fun = fun

    def __get__(self, instance, owner=None):
        return self if instance is None else self.fun.__get__(instance, owner)


class aval_property:
    """A property of a value's type that its tracers expose."""

    def __init__(self, fget):
        self.fget = fget

    def __get__(self, instance, owner=None):
        return self if instance is None else self.fget(instance)


def cur_qdd(x):
    """The quasi-dynamic data of the mutable high-level value `x` (what its type says
    it holds now): outside any transformation, as in JAX, `x.cur_qdd()`. A
    transformation would track it in its own trace, and plax stages no high-level
    values, so there it is an error."""
    if current_trace() is not EVAL_TRACE:
        raise TypeError(f"cur_qdd of a {type(x).__name__} under a transformation: plax "
                        "cannot trace high-level values (jax.experimental.hijax)")
    return x.cur_qdd()


def register_hitype(value_class: type, typeof_fn) -> None:
    """Records that values of `value_class` have the type `typeof_fn(value)`."""
    _hitypes[value_class] = typeof_fn


class _EffectTypeSet:
    """Effect types allowed in control-flow bodies."""

    def __init__(self):
        self._types: set[type] = set()

    def add_type(self, effect_type: type) -> None:
        self._types.add(effect_type)

    def contains(self, effect) -> bool:
        return any(isinstance(effect, t) for t in self._types)


control_flow_allowed_effects = _EffectTypeSet()
