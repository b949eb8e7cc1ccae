"""Configuration options: process-wide `Flag`s and thread-local `State`s.

A *Flag* configures something built once per process (which backends start, how
many CPU devices): it may be set once, before it is first read. A *State* changes
what tracing or compilation does and can be changed at any time, globally
(`config.update`) or for one thread inside a `with` block (`with enable_x64(True):`).
States are jaxlib `Config` holders, so their thread-local values live in C++; plax
builds its own cache-key tuples from them (`trace_context()`, `jit_key_context()`)
and never installs them in jaxlib's process-global slots, which JAX uses (DESIGN §9).

Options keep JAX's names (`jax_enable_x64`); `plax_enable_x64` is accepted as an
alias. An option named `jax_foo` reads the environment variables `PLAX_FOO` and
`JAX_FOO` (the first wins) when it is defined; with absl in use, each option is
also an absl flag (`--plax_foo`; a `--jax_foo` that JAX defined is honoured too).
"""
from __future__ import annotations

import contextlib
import difflib
import functools
import itertools
import logging
import numbers
import os
import sys
from typing import Any, Callable, Sequence

from jaxlib._jax import config as _jaxlib_config

unset = _jaxlib_config.unset
"""The value of a thread-local State that no `with` block has set (so the global
value applies)."""
_NO_DEFAULT = object()

_TRUE_WORDS = frozenset({"y", "yes", "t", "true", "on", "1"})
_FALSE_WORDS = frozenset({"n", "no", "f", "false", "off", "0"})


def env_var_names(name: str) -> tuple[str, ...]:
    """The environment variables an option reads, highest priority first."""
    base = name.upper()
    for prefix in ("JAX_", "PLAX_"):
        if base.startswith(prefix):
            base = base[len(prefix):]
            return ("PLAX_" + base, "JAX_" + base)
    return (base,)


def _read_env(name: str) -> tuple[str, str] | None:
    """(variable, text) of the first of the option's variables that is set, or None."""
    return next(((var, os.environ[var]) for var in env_var_names(name) if var in os.environ),
                None)


# --- Kinds of option: how a value is checked, read from text, and shown to absl.

class _Kind:
    """Validation and conversion rules shared by all options of one value type."""
    absl_define: str | None = None  # name of the absl DEFINE_* function, if any

    def parse(self, option: str, value: Any) -> Any:
        raise NotImplementedError

    def from_env(self, var: str, text: str) -> Any:
        return self.parse(var, text)

    def absl_args(self) -> tuple:
        return ()


class _BoolKind(_Kind):
    absl_define = "DEFINE_bool"

    def parse(self, option, value):
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _TRUE_WORDS:
                return True
            if word in _FALSE_WORDS:
                return False
            raise ValueError(f"invalid truth value {value!r} for {option!r}; expected one "
                             f"of {sorted(_TRUE_WORDS)} or {sorted(_FALSE_WORDS)}")
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise TypeError(f"{option!r} takes a bool, got {value!r} of type {type(value).__name__}")

    def from_env(self, var, text):
        try:
            return self.parse(var, text)
        except ValueError:
            raise ValueError(f"invalid truth value {text!r} for environment variable {var!r}; "
                             f"expected one of {sorted(_TRUE_WORDS)} or {sorted(_FALSE_WORDS)}"
                             ) from None


class _NumberKind(_Kind):
    def __init__(self, type_: type, minimum=None, optional: bool = False):
        self.type = type_
        self.minimum = minimum
        self.optional = optional  # None is a value too
        self.accepted = numbers.Integral if type_ is int else numbers.Real
        self.expected = "an int" if type_ is int else "a float"
        self.absl_define = "DEFINE_integer" if type_ is int else "DEFINE_float"

    def parse(self, option, value):
        if self.optional and (value is None or (isinstance(value, str)
                                                and value.strip().lower() == "none")):
            return None
        if isinstance(value, str):
            try:
                value = self.type(value.strip())
            except ValueError:
                raise ValueError(f"{option!r} takes {self.expected}, got {value!r}") from None
        elif isinstance(value, bool) or not isinstance(value, self.accepted):
            raise TypeError(f"{option!r} takes {self.expected}, got {value!r} "
                            f"of type {type(value).__name__}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{option!r} must be >= {self.minimum}, got {value!r}")
        return self.type(value)


class _StringKind(_Kind):
    absl_define = "DEFINE_string"

    def __init__(self, optional: bool):
        self.optional = optional

    def parse(self, option, value):
        if value is None and self.optional:
            return None
        if not isinstance(value, str):
            allowed = "a str or None" if self.optional else "a str"
            raise TypeError(f"{option!r} takes {allowed}, got {value!r} "
                            f"of type {type(value).__name__}")
        return value

    def from_env(self, var, text):
        return None if (self.optional and text == "") else text


class _EnumKind(_Kind):
    absl_define = "DEFINE_enum"

    def __init__(self, values: Sequence[str], optional: bool):
        self.values = tuple(values)
        self.optional = optional

    def parse(self, option, value):
        if value is None and self.optional:
            return None
        if not isinstance(value, str) or value not in self.values:
            allowed = ("None or " if self.optional else "") + f"one of {list(self.values)}"
            raise ValueError(f"{option!r} must be {allowed}, got {value!r}")
        return value

    def from_env(self, var, text):
        if text == "" and self.optional:
            return None
        try:
            return self.parse(var, text)
        except ValueError:
            raise ValueError(f"environment variable {var!r} must be one of "
                             f"{list(self.values)}, got {text!r}") from None

    def absl_args(self):
        return (list(self.values),)


class _ObjectKind(_Kind):
    """Any Python object (a device...), checked by a validator; from the environment,
    the text itself (a platform name)."""

    def __init__(self, validator: Callable[[str, Any], None] | None):
        self.validator = validator

    def parse(self, option, value):
        if self.validator is not None:
            self.validator(option, value)
        return value


# --- Holders.

class Flag:
    """A process-wide option, set at most once and only before it is first read.

    Flags configure things built once (backends, the compilation cache), so a
    later change could not take effect; setting one twice or after use is an error.
    """

    def __init__(self, name: str, default: Any, help: str, kind: _Kind):
        self.name = name
        self.help = help
        self._kind = kind
        self._value = kind.parse(name, default)
        self._was_set = False
        self._was_read = False

    @property
    def value(self):
        self._was_read = True
        return self._value

    def _peek(self):
        """The value, without counting as a use (for listings and absl defaults)."""
        return self._value

    def _set(self, value) -> None:
        if self._was_set:
            raise ValueError(f"flag {self.name!r} was already set to {self._value!r}; "
                             "a flag can be set only once")
        if self._was_read:
            raise ValueError(f"flag {self.name!r} was already used with value {self._value!r}; "
                             "set it before its first use (right after `import plax`)")
        self._value = self._kind.parse(self.name, value)
        self._was_set = True

    def __bool__(self):
        raise TypeError(f"bool() of Flag {self.name!r}; did you mean `.value`?")

    def __repr__(self):
        return f"Flag({self.name}={self._value!r})"


class State(_jaxlib_config.Config):
    """A thread-local option: a global value plus an optional per-thread override.

    `.value` is this thread's value if one is set, else the global one.
    `state(new_value)` is a context manager (and decorator) that sets this thread's
    value and restores the previous one on exit. `update_hook`, if given, is called
    with the new effective value whenever the global or this thread's value changes;
    `update_global_hook` only when `config.update` sets the global value.
    """

    def __init__(self, name: str, default: Any, help: str, kind: _Kind, *,
                 include_in_jit_key: bool = False, include_in_trace_context: bool = False,
                 update_hook: Callable[[Any], None] | None = None,
                 update_global_hook: Callable[[Any], None] | None = None,
                 default_context_value: Any = _NO_DEFAULT):
        default = kind.parse(name, default)
        super().__init__(name, default, include_in_jit_key=include_in_jit_key,
                         include_in_trace_context=include_in_trace_context)
        self.help = help
        self.include_in_jit_key = include_in_jit_key
        self.include_in_trace_context = include_in_trace_context
        self._kind = kind
        self._update_hook = update_hook
        self._update_global_hook = update_global_hook
        self._default_context_value = default_context_value
        if update_hook is not None:
            update_hook(default)

    def _peek(self):
        return self.value

    def add_update_hook(self, hook: Callable[[Any], None]) -> None:
        """Also calls `hook` with the effective value now and on every change: how a
        package above the kernel follows an option the kernel defines."""
        previous = self._update_hook
        self._update_hook = hook if previous is None else lambda v: (previous(v), hook(v))
        hook(self.value)

    def _set(self, value) -> None:
        value = self._kind.parse(self.name, value)
        previous = self.get_global()
        self.set_global(value)
        if self._update_hook is not None:
            try:
                self._update_hook(self.value)
            except Exception:  # the hook refused the value: the option keeps its old one
                self.set_global(previous)
                raise
        if self._update_global_hook is not None:
            self._update_global_hook(value)

    def __call__(self, new_val: Any = _NO_DEFAULT) -> "StateContext":
        if new_val is _NO_DEFAULT:
            if self._default_context_value is _NO_DEFAULT:
                raise TypeError(f"the context manager for {self.name!r} needs the new value, "
                                f"e.g. `with {self.name.removeprefix('jax_')}(value):`")
            new_val = self._default_context_value
        return StateContext(self, self._kind.parse(self.name, new_val))

    def __bool__(self):
        raise TypeError(f"bool() of State {self.name!r}; did you mean `.value`?")

    def __repr__(self):
        return f"State({self.name}={self.value!r})"


def document_option(state, public: str):
    """Gives the option `state`, exported as `plax.<public>`, its own docstring: its
    help, how to set it and (a bool or enum option) an example; other values as given."""
    if not isinstance(state, State) or "__doc__" in vars(state):
        return state
    values = ([not state.value] if isinstance(state._kind, _BoolKind) else
              [v for v in getattr(state._kind, "values", ()) if v != state.value][:1])
    doc = (f"{state.help}\n\n`with plax.{public}(value):` sets the option `{state.name}` for "
           f"a block in this thread (as a decorator, for a function's calls); "
           f"`plax.config.update({state.name!r}, value)` sets it for the process; "
           f"`plax.{public}.value` reads it.")
    if values:
        doc += (f"\n\nExamples:\n    >>> import plax\n    >>> with plax.{public}({values[0]!r}):"
                f"\n    ...     plax.{public}.value\n    {values[0]!r}\n")
    state.__doc__ = doc
    return state


class StateContext:
    """Sets a State's value in the current thread for a `with` block or a call."""

    def __init__(self, state: State, new_value: Any):
        self.state = state
        self.new_value = new_value
        self._saved: list = []  # a stack, so one object can be entered re-entrantly

    def __enter__(self):
        self._saved.append(self.state.swap_local(self.new_value))
        if self.state._update_hook is not None:
            try:
                self.state._update_hook(self.state.value)
            except Exception:  # refused: the block is not entered, nothing changes
                self.state.set_local(self._saved.pop())
                raise

    def __exit__(self, *exc_info):
        self.state.set_local(self._saved.pop())
        if self.state._update_hook is not None:
            self.state._update_hook(self.state.value)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with StateContext(self.state, self.new_value):
                return fn(*args, **kwargs)
        return wrapper


# --- The registry.

class Config:
    """All options by name: read, update, list, and define them."""

    def __init__(self):
        self._options: dict[str, Flag | State] = {}
        self._trace_states: list[State] = []
        self._jit_key_states: list[State] = []
        self._absl_flags = None  # the absl.flags module once absl is in use

    # Lookup.
    def _holder(self, name: str) -> Flag | State:
        options = self.__dict__["_options"]
        spelled = "jax_" + name[len("plax_"):] if name.startswith("plax_") else name
        holder = options.get(name, options.get(spelled))
        if holder is None:
            close = difflib.get_close_matches(spelled, options, n=3)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise AttributeError(f"Unrecognized config option: {name!r}{hint}")
        return holder

    def update(self, name: str, value: Any) -> None:
        """Sets an option's global value (a Flag: its only value)."""
        self._holder(name)._set(value)

    def read(self, name: str) -> Any:
        """The option's current value in this thread."""
        return self._holder(name).value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._holder(name).value

    def __dir__(self):
        return [*super().__dir__(), *self._options]

    def values(self) -> dict[str, Any]:
        """Every option's current value, by name (does not count as using a Flag)."""
        return {name: holder._peek() for name, holder in self._options.items()}

    # Cache keys.
    def trace_context(self) -> tuple:
        """Current values of the States that change what tracing produces."""
        return tuple(state.value for state in self._trace_states)

    def trace_context_names(self) -> tuple[str, ...]:
        return tuple(state.name for state in self._trace_states)

    def jit_key_context(self) -> tuple:
        """Current values of the States that change compiled code."""
        return tuple(state.value for state in self._jit_key_states)

    def jit_key_context_names(self) -> tuple[str, ...]:
        return tuple(state.name for state in self._jit_key_states)

    # Definitions.
    def _add(self, holder: Flag | State) -> None:
        if holder.name in self._options:
            raise ValueError(f"config option {holder.name!r} is already defined")
        self._options[holder.name] = holder
        if isinstance(holder, State):
            self._join_cache_keys(holder)
        if self._absl_flags is not None:
            self._define_absl_flag(holder)

    def _join_cache_keys(self, state: State) -> None:
        if state.include_in_trace_context:
            self._trace_states.append(state)
        if state.include_in_jit_key:
            self._jit_key_states.append(state)

    def _default_from_env(self, name: str, default: Any, kind: _Kind) -> Any:
        found = _read_env(name)
        return default if found is None else kind.from_env(*found)

    def _define_state(self, name: str, default: Any, help: str, kind: _Kind, *,
                      include_in_jit_key: bool = False, include_in_trace_context: bool = False,
                      update_hook: Callable[[Any], None] | None = None,
                      update_global_hook: Callable[[Any], None] | None = None,
                      default_context_value: Any = _NO_DEFAULT) -> State:
        state = State(name, self._default_from_env(name, default, kind), help, kind,
                      include_in_jit_key=include_in_jit_key,
                      include_in_trace_context=include_in_trace_context,
                      update_hook=update_hook, update_global_hook=update_global_hook,
                      default_context_value=default_context_value)
        self._add(state)
        return state

    # Each define_*_state takes the keyword options `include_in_jit_key`,
    # `include_in_trace_context` (both False by default), `update_hook` and
    # `update_global_hook` (see State).
    def define_bool_state(self, name: str, default: bool, help: str, **options) -> State:
        """A bool State; `with state():` with no argument sets it to True."""
        return self._define_state(name, default, help, _BoolKind(), default_context_value=True,
                                  **options)

    def define_int_state(self, name: str, default: int, help: str, *,
                         minimum: int | None = None, **options) -> State:
        return self._define_state(name, default, help, _NumberKind(int, minimum), **options)

    def define_float_state(self, name: str, default: float, help: str, *,
                           minimum: float | None = None, **options) -> State:
        return self._define_state(name, default, help, _NumberKind(float, minimum), **options)

    def define_enum_state(self, name: str, enum_values: Sequence[str], default: str, help: str,
                          **options) -> State:
        return self._define_state(name, default, help, _EnumKind(enum_values, optional=False),
                                  **options)

    def define_optional_enum_state(self, name: str, enum_values: Sequence[str],
                                   default: str | None, help: str, **options) -> State:
        return self._define_state(name, default, help, _EnumKind(enum_values, optional=True),
                                  **options)

    def define_string_state(self, name: str, default: str, help: str, **options) -> State:
        return self._define_state(name, default, help, _StringKind(optional=False), **options)

    def define_optional_string_state(self, name: str, default: str | None, help: str,
                                     **options) -> State:
        return self._define_state(name, default, help, _StringKind(optional=True), **options)

    def define_object_state(self, name: str, default: Any, help: str, *,
                            validator: Callable[[str, Any], None] | None = None,
                            **options) -> State:
        """A State holding any object; `validator(name, value)` raises on bad values.
        It is not an absl flag."""
        return self._define_state(name, default, help, _ObjectKind(validator), **options)

    def _define_flag(self, name, default, help, kind, read_env):
        if read_env:
            default = self._default_from_env(name, default, kind)
        flag = Flag(name, default, help, kind)
        self._add(flag)
        return flag

    def bool_flag(self, name: str, default: bool, help: str, *, read_env: bool = False) -> Flag:
        return self._define_flag(name, default, help, _BoolKind(), read_env)

    def int_flag(self, name: str, default: int, help: str, *, minimum: int | None = None,
                 read_env: bool = False) -> Flag:
        return self._define_flag(name, default, help, _NumberKind(int, minimum), read_env)

    def float_flag(self, name: str, default: float | None, help: str, *,
                   minimum: float | None = None, optional: bool = False,
                   read_env: bool = False) -> Flag:
        """A float Flag; with `optional`, None (or the text 'none') is a value too."""
        return self._define_flag(name, default, help, _NumberKind(float, minimum, optional),
                                 read_env)

    def string_flag(self, name: str, default: str | None, help: str, *,
                    read_env: bool = False) -> Flag:
        """A string Flag; a None default makes None (unset) a valid value too."""
        return self._define_flag(name, default, help, _StringKind(optional=default is None),
                                 read_env)

    def enum_flag(self, name: str, enum_values: Sequence[str], default: str, help: str, *,
                  read_env: bool = False) -> Flag:
        return self._define_flag(name, default, help, _EnumKind(enum_values, optional=False),
                                 read_env)

    # absl.
    def config_with_absl(self) -> None:
        """Makes every option an absl flag; flags given on the command line are applied
        once `absl.app.run` has parsed them."""
        try:
            from absl import app, flags
        except ImportError as e:
            raise ImportError("config_with_absl() needs absl: `pip install absl-py`") from e
        if self._absl_flags is not None:
            return
        self._absl_flags = flags
        for holder in self._options.values():
            self._define_absl_flag(holder)
        app.call_after_init(self._apply_absl_flags)

    def parse_flags_with_absl(self) -> None:
        """Applies the `--plax_...`/`--jax_...` flags of the command line (up to `--`)
        without `absl.app.run` (test programs call it before their main); other
        arguments are left alone."""
        self.config_with_absl()
        ours = [a for a in itertools.takewhile(lambda a: a != "--", sys.argv)
                if a.startswith(("--plax", "--jax", "--noplax", "--nojax"))]
        self._absl_flags.FLAGS(["", *ours], known_only=True)
        self._apply_absl_flags()

    def _define_absl_flag(self, holder: Flag | State) -> None:
        # plax's absl flags use the `plax_` spelling: the `jax_` names belong to JAX,
        # which defines them itself in a process that uses both (a second definition
        # would be an absl error). A `--jax_...` flag JAX defined is honoured too.
        define = holder._kind.absl_define
        name = _absl_name(holder.name)
        if define is None or name in self._absl_flags.FLAGS:
            return
        getattr(self._absl_flags, define)(name, holder._peek(), *holder._kind.absl_args(),
                                          help=holder.help)

    def _apply_absl_flags(self) -> None:
        flag_values = self._absl_flags.FLAGS
        for name, holder in self._options.items():
            for flag_name in (name, _absl_name(name)):
                if flag_name in flag_values and flag_values[flag_name].present:
                    holder._set(flag_values[flag_name].value)


def _absl_name(option: str) -> str:
    return "plax_" + option.removeprefix("jax_")


config = Config()
"""The one configuration object: `config.update(name, value)`, `config.read(name)`
and every option as an attribute, as in JAX."""

# --- The options. Names, defaults and cache-key membership follow JAX 0.10.

enable_x64 = config.define_bool_state(
    "jax_enable_x64", False,
    "Enable 64-bit types (int64, float64, complex128); when off, 64-bit requests "
    "become 32-bit.",
    include_in_jit_key=True, include_in_trace_context=True)

disable_jit = config.define_bool_state(
    "jax_disable_jit", False,
    "Run jit-decorated functions op by op in Python instead of compiling them.",
    include_in_jit_key=True, include_in_trace_context=True)

numpy_rank_promotion = config.define_enum_state(
    "jax_numpy_rank_promotion", ["allow", "warn", "raise"], "allow",
    "What to do when plax.numpy broadcasts arrays of different ranks implicitly.",
    include_in_jit_key=True, include_in_trace_context=True)

numpy_dtype_promotion = config.define_enum_state(
    "jax_numpy_dtype_promotion", ["standard", "strict"], "standard",
    "'standard' uses the type promotion lattice; 'strict' refuses implicit promotion "
    "between different dtypes.",
    include_in_jit_key=True, include_in_trace_context=True)

softmax_custom_jvp = config.define_bool_state(
    "jax_softmax_custom_jvp", False,
    "Differentiate plax.nn.softmax by its own rule (y * (t - sum(y * t))) instead of "
    "through its operations with the maximum held constant.",
    include_in_jit_key=True, include_in_trace_context=True)

default_matmul_precision = config.define_optional_enum_state(
    "jax_default_matmul_precision",
    ["default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
     "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
     "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
     "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
     "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64"],
    None,
    "Default precision (or dot algorithm preset) of matmuls and convolutions on "
    "32-bit inputs.",
    include_in_jit_key=True, include_in_trace_context=True)

enable_checks = config.define_bool_state(
    "jax_enable_checks", False,
    "Check plax's internal invariants (Jaxpr types...); slower.")

# In the trace context too, so that cached calls (jit's fast path, eager dispatch)
# take a checking path while they are on, and cost nothing while they are off.
debug_nans = config.define_bool_state(
    "jax_debug_nans", False,
    "Raise when a computation produces a NaN, re-running it op by op to find the culprit.",
    include_in_jit_key=True, include_in_trace_context=True)

check_tracer_leaks = config.define_bool_state(
    "jax_check_tracer_leaks", False,
    "Report a tracer that outlives its transformation (stored in a global, an attribute, "
    "a closure) when the transformation ends, naming where it was created. Slower.")
checking_leaks = check_tracer_leaks  # `with plax.checking_leaks():`, as in JAX

debug_infs = config.define_bool_state(
    "jax_debug_infs", False,
    "Raise when a computation produces an inf, re-running it op by op to find the culprit.",
    include_in_jit_key=True, include_in_trace_context=True)

no_tracing = config.define_bool_state(
    "jax_no_tracing", False,
    "Raise instead of tracing a function to a Jaxpr (a jit cache miss, make_jaxpr) or "
    "compiling a new eager operation: shows that a loop reuses what it compiled.")

no_execution = config.define_bool_state(
    "jax_no_execution", False,
    "Raise instead of running any compiled computation (jitted or eager).",
    include_in_jit_key=True, include_in_trace_context=True)

allow_f16_reductions = config.define_bool_state(
    "jax_allow_f16_reductions", True,
    "If False, reduce_sum over float16 or bfloat16 values raises.",
    include_in_jit_key=True, include_in_trace_context=True)

jax2tf_associative_scan_reductions = config.define_bool_state(
    "jax2tf_associative_scan_reductions", False,
    "Chooses how jax2tf lowers cumulative reductions; plax has no jax2tf, so it changes "
    "nothing here (accepted so that programs setting it run).")

TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
"""The transfer guard's levels: 'log'/'disallow' act on implicit transfers only, the
'_explicit' ones on `device_put`/`device_get` too."""
TRANSFER_DIRECTIONS = ("host_to_device", "device_to_device", "device_to_host")
"""The directions each with its own guard option (`jax_transfer_guard_<direction>`)."""


def _transfer_guard_state(direction: str) -> State:
    return config.define_optional_enum_state(
        f"jax_transfer_guard_{direction}", TRANSFER_GUARD_LEVELS, None,
        f"Transfer guard level of {direction.replace('_', '-')} transfers; None means "
        "'allow', unless jax_transfer_guard sets all directions.")


transfer_guard_host_to_device = _transfer_guard_state("host_to_device")
transfer_guard_device_to_device = _transfer_guard_state("device_to_device")
transfer_guard_device_to_host = _transfer_guard_state("device_to_host")


def _set_every_transfer_guard(level: str | None) -> None:
    for direction in TRANSFER_DIRECTIONS:
        config.update(f"jax_transfer_guard_{direction}", level)


_transfer_guard_all = config.define_optional_enum_state(
    "jax_transfer_guard", TRANSFER_GUARD_LEVELS, None,
    "Transfer guard level of all transfers; setting it sets the three "
    "jax_transfer_guard_* options (read those for a direction's level).",
    update_global_hook=_set_every_transfer_guard)
if _transfer_guard_all.value is not None:  # from PLAX_TRANSFER_GUARD/JAX_TRANSFER_GUARD
    _set_every_transfer_guard(_transfer_guard_all.value)


@contextlib.contextmanager
def transfer_guard(new_val: str):
    """A context manager that sets the transfer guard level of every direction
    (host to device, device to host, device to device) for a block, in this
    thread.

    Levels: `"allow"`, `"log"` (log implicit transfers), `"disallow"` (raise on
    implicit transfers), and `"log_explicit"`/`"disallow_explicit"` (also
    explicit ones). Implicit transfers are those plax makes for you (a NumPy
    array passed to a jitted function, `np.asarray` of an Array); explicit ones
    are `device_put`/`device_get`.

    Args:
        new_val: the level.

    Raises:
        ValueError: an unknown level.

    Examples:
        >>> import numpy as np
        >>> import plax, plax.numpy as jnp
        >>> f = plax.jit(lambda a: a + 1)
        >>> with plax.transfer_guard("disallow"):
        ...     try:
        ...         f(np.ones(2))  # implicit host-to-device transfer of the argument
        ...     except Exception as err:  # a JaxRuntimeError
        ...         print("Disallowed host-to-device transfer" in str(err))
        True
        >>> with plax.transfer_guard("disallow"):
        ...     f(plax.device_put(np.ones(2)))  # explicit: allowed
        Array([2., 2.], dtype=float32)
    """
    with transfer_guard_host_to_device(new_val), transfer_guard_device_to_device(new_val), \
            transfer_guard_device_to_host(new_val), _transfer_guard_all(new_val):
        yield


thread_guard = config.define_bool_state(
    "jax_thread_guard", False,
    "Raise when a computation spanning several processes is run from a thread other than "
    "the one that set the guard (`with plax.thread_guard(True):`): threads that start "
    "multi-process work in different orders on different processes deadlock or crash. "
    "The guard is process-wide; setting it from two threads at once is an error.")

auto_pcast = config.define_bool_state(
    "jax_auto_pcast", True,
    "Inside a shard_map checked for varying manual axes, let an operation combine values "
    "that vary over different axes (the result varies over all of them); False makes that "
    "an error, fixed by making the operands vary alike with lax.pvary.",
    include_in_jit_key=True, include_in_trace_context=True)

remove_size_one_mesh_axis_from_type = config.define_bool_state(
    "jax_remove_size_one_mesh_axis_from_type", False,
    "Leave mesh axes of size 1 out of the shardings in types (Explicit axes) and out of the "
    "axes a shard_map value varies over.",
    include_in_jit_key=True, include_in_trace_context=True)


debug_key_reuse = config.define_bool_state(
    "jax_debug_key_reuse", False,
    "Track the use of typed PRNG keys (made by plax.random.key) and raise KeyReuseError "
    "when a consumed key is used again: eagerly when it is passed, and when a jitted "
    "function's Jaxpr is traced. Costs a little Python on each call of a function taking "
    "or returning keys while on; nothing while off.",
    include_in_jit_key=True, include_in_trace_context=True)

array_garbage_collection_guard = config.define_optional_enum_state(
    "jax_array_garbage_collection_guard", ["allow", "log", "fatal"], None,
    "What happens when Python's cycle collector, not reference counting, frees a plax "
    "Array made while the guard was on (its device memory waited for the collector): "
    "'allow' (None) nothing, 'log' logs an error, 'fatal' aborts the process.",
    include_in_trace_context=True)  # cached calls made while it is on watch their outputs


def _check_hashable(option: str, value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{option!r} takes hashable values (they key the jit caches), got "
                        f"{value!r} of type {type(value).__name__}") from None


_user_contexts = itertools.count()


def make_user_context(default_value: Any = None) -> State:
    """Makes a new option of your own whose value is part of every compilation
    cache key.

    Inside `with context(value):`, jitted functions trace and compile anew for
    each value, so code that reads `context.value` at trace time (a Python
    setting that changes what is computed) is never served a stale program.

    Args:
        default_value: the option's value outside any `with` block.

    Returns:
        A `State`: call it with a value for a `with` block (or decorator); read
        `.value`.

    Examples:
        >>> import plax
        >>> scale = plax.make_user_context(1.0)
        >>> f = plax.jit(lambda x: x * scale.value)
        >>> f(2.0)
        Array(2., dtype=float32, weak_type=True)
        >>> with scale(10.0):
        ...     f(2.0)  # traced again for the new value
        Array(20., dtype=float32, weak_type=True)
    """
    # As JAX's, it keys the caches but is no named option (not in config.values()).
    state = State(f"jax_user_context_{next(_user_contexts)}", default_value,
                  "A user context made by make_user_context.", _ObjectKind(_check_hashable),
                  include_in_jit_key=True, include_in_trace_context=True)
    config._join_cache_keys(state)
    return state


def _check_device(option: str, value: Any) -> None:
    if value is None or (isinstance(value, str) and value):
        return
    if hasattr(value, "platform") and hasattr(value, "id"):
        return
    raise ValueError(f"{option!r} must be None, a device (e.g. plax.devices('cpu')[0]) or a "
                     f"platform name such as 'cpu', got {value!r}")


default_device = config.define_object_state(
    "jax_default_device", None,
    "Device (or platform name) for uncommitted computations; None uses the default backend.",
    validator=_check_device, include_in_jit_key=True, include_in_trace_context=True)

use_shardy_partitioner = config.define_bool_state(
    "jax_use_shardy_partitioner", True,
    "Lower shardings with the Shardy (sdy) dialect instead of GSPMD.",
    include_in_jit_key=True, include_in_trace_context=True)

enable_pgle = config.define_bool_state(
    "jax_enable_pgle", False,
    "Profile the first runs of each jitted computation and recompile it with the "
    "measured latencies (profile-guided latency estimation).",
    include_in_jit_key=True, include_in_trace_context=True)

pgle_profiling_runs = config.define_int_state(
    "jax_pgle_profiling_runs", 3,
    "Number of profiled runs before PGLE recompiles a computation.",
    minimum=0, include_in_jit_key=True, include_in_trace_context=True)

pgle_aggregation_percentile = config.define_int_state(
    "jax_pgle_aggregation_percentile", 90,
    "Percentile of the profiled runs' latencies (per instruction) that PGLE gives the "
    "compiler, from 0 to 100.",
    minimum=0)

share_binary_between_hosts_timeout_ms = config.define_int_state(
    "jax_share_binary_between_hosts_timeout_ms", 20 * 60 * 1000,
    "How long a process of a multi-process run waits for another process to publish "
    "what all must compile with (the PGLE profile), in milliseconds.",
    minimum=1)

compilation_cache_expect_pgle = config.define_bool_state(
    "jax_compilation_cache_expect_pgle", False,
    "Load the PGLE-optimized executables of the persistent cache even with PGLE off "
    "(warning when only the unprofiled one is there): profile once with PGLE on, then "
    "run without the profiling runs.")

log_compiles = config.define_bool_state(
    "jax_log_compiles", False,
    "Log each compilation at WARNING level (otherwise DEBUG).")

explain_cache_misses = config.define_bool_state(
    "jax_explain_cache_misses", False,
    "Log why each tracing/compilation cache miss happened at WARNING level.")

default_prng_impl = config.define_enum_state(
    "jax_default_prng_impl", ["threefry2x32", "rbg", "unsafe_rbg"], "threefry2x32",
    "PRNG implementation used by plax.random when none is given.",
    include_in_jit_key=True, include_in_trace_context=True)

enable_custom_prng = config.define_bool_state(
    "jax_enable_custom_prng", False,
    "Make plax.random.PRNGKey (and the functions given raw uint32 keys) return typed "
    "key arrays instead of raw ones.")

legacy_prng_key = config.define_enum_state(
    "jax_legacy_prng_key", ["allow", "warn", "error"], "allow",
    "What plax.random does when given a raw uint32 key instead of a typed key array.")

random_seed_offset = config.define_int_state(
    "jax_random_seed_offset", 0,
    "Added to every seed given to plax.random.key/PRNGKey.",
    include_in_jit_key=True, include_in_trace_context=True)

high_dynamic_range_gumbel = config.define_bool_state(
    "jax_high_dynamic_range_gumbel", False,
    "Draw Gumbel noise (plax.random.gumbel, categorical, choice) from two uniform samples, "
    "covering events of low probability more precisely.",
    include_in_trace_context=True)

threefry_partitionable = config.define_bool_state(
    "jax_threefry_partitionable", True,
    "Use the threefry variant whose random bits can be generated shard by shard.",
    include_in_jit_key=True, include_in_trace_context=True)

platforms = config.string_flag(
    "jax_platforms", None,
    "Comma-separated platforms to initialize, in priority order (e.g. 'cuda,cpu'); "
    "None tries every installed backend.",
    read_env=True)

platform_name = config.string_flag(
    "jax_platform_name", "",
    "The default backend's platform (e.g. 'cpu'), among those started; '' means the "
    "first of them. Deprecated in JAX in favour of jax_platforms.",
    read_env=True)

num_cpu_devices = config.int_flag(
    "jax_num_cpu_devices", -1,
    "Number of CPU devices; -1 follows XLA_FLAGS=--xla_force_host_platform_device_count.",
    minimum=-1)

cpu_enable_async_dispatch = config.bool_flag(
    "jax_cpu_enable_async_dispatch", True,
    "Dispatch CPU computations asynchronously; False runs them inline.")

cpu_collectives_implementation = config.enum_flag(
    "jax_cpu_collectives_implementation", ["gloo", "mpi"], "gloo",
    "How CPU computations that span the processes of a plax.distributed run "
    "communicate: gloo over TCP, or MPI (which needs an MPI library).", read_env=True)

distributed_collective_timeout = config.float_flag(
    "jax_distributed_collective_timeout", 300.0,
    "Seconds a process of a plax.distributed run waits in a multi-process operation "
    "(the result of a computation over several processes, multihost_utils) before raising "
    "plax.errors.DistributedError naming the processes that did not arrive; None waits "
    "forever, as JAX does. plax.distributed.initialize(collective_timeout=) overrides it.",
    minimum=0.0, optional=True, read_env=True)

coordinator_listen_on_all_interfaces = config.bool_flag(
    "jax_coordinator_listen_on_all_interfaces", False,
    "Whether process 0 of a plax.distributed run serves the coordinator on every network "
    "interface ([::]:port, as JAX does). By default it listens on loopback only, which "
    "suits one machine; multi-host runs set this or pass coordinator_bind_address.",
    read_env=True)

# The persistent compilation cache (plax_runtime.persistent_cache reads these on each
# compile, so changing them takes effect for the next compile).
enable_compilation_cache = config.define_bool_state(
    "jax_enable_compilation_cache", True,
    "If False, the persistent compilation cache is off even when a directory is set.")

compilation_cache_dir = config.define_optional_string_state(
    "jax_compilation_cache_dir", None,
    "Directory of the persistent compilation cache (set it here or with "
    "plax.experimental.compilation_cache.compilation_cache.set_cache_dir); None "
    "disables the cache.")

persistent_cache_min_compile_time_secs = config.define_float_state(
    "jax_persistent_cache_min_compile_time_secs", 1.0,
    "Only computations that took at least this long to compile are written to the "
    "persistent cache.",
    minimum=0.0)

persistent_cache_min_entry_size_bytes = config.define_int_state(
    "jax_persistent_cache_min_entry_size_bytes", 0,
    "Entries smaller than this many bytes (compressed) are not written to the "
    "persistent cache; 0 and -1 write every size.",
    minimum=-1)

compilation_cache_max_size = config.define_int_state(
    "jax_compilation_cache_max_size", -1,
    "Largest total size in bytes of the persistent cache directory: after a write the "
    "least recently used entries are deleted until it fits. -1: no limit; 0: nothing "
    "is written.",
    minimum=-1)

compilation_cache_include_metadata_in_key = config.define_bool_state(
    "jax_compilation_cache_include_metadata_in_key", False,
    "Include source locations in the persistent cache key; if False, the same program "
    "written on other lines or in another file still hits.")

raise_persistent_cache_errors = config.define_bool_state(
    "jax_raise_persistent_cache_errors", False,
    "Raise errors met reading or writing the persistent cache instead of warning "
    "and compiling.")

# XLA's compiler settings (plax_runtime.executable applies them to each compile; they
# are part of the executable cache's key).
_EFFORT_LEVELS = ["UNKNOWN", "O0", "O1", "O2", "O3"]
optimization_level = config.define_enum_state(
    "jax_optimization_level", _EFFORT_LEVELS, "UNKNOWN",
    "XLA's optimization level for execution time (UNKNOWN: XLA's default).",
    include_in_jit_key=True)
memory_fitting_level = config.define_enum_state(
    "jax_memory_fitting_level", _EFFORT_LEVELS, "O2",
    "XLA's effort level at fitting the program into device memory.", include_in_jit_key=True)
exec_time_optimization_effort = config.define_float_state(
    "jax_exec_time_optimization_effort", 0.0,
    "XLA's effort at minimizing execution time, in [-1.0, 1.0] (higher: more).",
    include_in_jit_key=True)
memory_fitting_effort = config.define_float_state(
    "jax_memory_fitting_effort", 0.0,
    "XLA's effort at minimizing memory use, in [-1.0, 1.0] (higher: more).",
    include_in_jit_key=True)
disable_most_optimizations = config.define_bool_state(
    "jax_disable_most_optimizations", False,
    "Ask XLA for little optimization work (backend optimization level 0, no expensive "
    "LLVM passes): faster compiles of slower programs.", include_in_jit_key=True)
compiler_enable_remat_pass = config.define_bool_state(
    "jax_compiler_enable_remat_pass", True,
    "Let XLA's rematerialization pass trade compute for memory; False disables it.",
    include_in_jit_key=True)
dump_ir_to = config.define_string_state(
    "jax_dump_ir_to", "",
    "A directory to write each compiled program's IR to ('' writes none).")
dump_ir_modes = config.define_string_state(
    "jax_dump_ir_modes", "stablehlo",
    "Comma-separated kinds of IR jax_dump_ir_to writes (plax writes 'stablehlo').")


def _set_logging_level(level: str | None) -> None:
    for name in ("plax", "plax_runtime"):
        logging.getLogger(name).setLevel(level or "NOTSET")


def _set_debug_log_modules(modules: str | None) -> None:
    for name in filter(None, (m.strip() for m in (modules or "").split(","))):
        logging.getLogger(name).setLevel(logging.DEBUG)


logging_level = config.define_enum_state(
    "jax_logging_level", ["NOTSET", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
    "NOTSET", "The level of plax's loggers ('plax', 'plax_runtime'); NOTSET defers to "
    "their parents.", update_global_hook=_set_logging_level)
debug_log_modules = config.define_string_state(
    "jax_debug_log_modules", "",
    "Comma-separated module names whose loggers log at DEBUG level.",
    update_global_hook=_set_debug_log_modules)
check_vma = config.define_bool_state(
    "check_vma", False,
    "True while the body of a shard_map with check_vma is traced (plax sets it; values "
    "there are typed with the manual axes they vary over).", include_in_trace_context=True)

# Accepted so that code setting them keeps working.
IGNORED_JAX_OPTIONS = {
    "jax_cuda_visible_devices": "all", "jax_rocm_visible_devices": "all",
    "jax_oneapi_visible_devices": "all", "jax_bcoo_cusparse_lowering": False,
    "jax_use_magma": "auto", "jax_threefry_gpu_kernel_lowering": False,
    "jax_pallas_use_mosaic_gpu": True, "jax_ragged_dot_use_gpu_pallas_triton_lowering": False,
    "jax_ragged_dot_use_ragged_dot_instruction": True, "jax_mock_gpu_topology": "",
    "mock_num_gpu_processes": 0, "jax_cross_host_transfer_socket_address": "",
    "jax_cross_host_transfer_timeout_seconds": None, "jax_cross_host_transfer_transfer_size": None,
    "jax_cross_host_transport_addresses": "", "jax_force_dcn_cross_host_transfers": False,
    "jax_enable_preemption_service": True, "jax_enable_recoverability": False,
    "jax2tf_default_native_serialization": True, "jax_custom_vjp3": False, "jax_remat3": False,
    "jax_scan3": False, "jax_use_direct_linearize": True,
    "jax_use_simplified_jaxpr_constants": False, "jax_refs_to_pins": False,
    "jax_use_emit_pipeline_primitive": False, "jax_debug_leaked_clients_on_clear_backends": False,
    "jax_pprint_use_color": True, "jax_xla_profile_version": 0,
    "jax_compiler_detailed_logging_min_ops": 10
}
"""JAX's options plax accepts and ignores (name -> JAX's default): they name nothing
plax has (other backends, multi-host transports, jax2tf, JAX's internal switches)."""
for _name, _default in IGNORED_JAX_OPTIONS.items():
    _help = "Accepted for JAX's sake and ignored: it names nothing plax has."
    if isinstance(_default, bool):
        config.bool_flag(_name, _default, _help)
    elif isinstance(_default, int):
        config.int_flag(_name, _default, _help)
    else:
        config.string_flag(_name, _default, _help)

trace_context = config.trace_context
jit_key_context = config.jit_key_context

if "absl.flags" in sys.modules:
    config.config_with_absl()
