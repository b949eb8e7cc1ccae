"""Ahead-of-time stages of a jitted function: `Traced` → `Lowered` → `Compiled`.

`jit(f).trace(*args)` stops after tracing (`.jaxpr`, `.out_info`),
`jit(f).lower(*args)` after lowering to StableHLO (`.as_text()`,
`.compiler_ir()`), and `.compile()` gives an executable that is called with the
*dynamic* arguments only (static ones were fixed when lowering), in the same
pytree structure and with the same shapes and dtypes.
"""
from __future__ import annotations

from typing import Any, Sequence

from jaxlib import _jax

from plax.extend import tree_util
from plax.extend.core import ClosedJaxpr, ShapeDtypeStruct, get_aval
from plax_transforms import executing
from plax_transforms.call_placement import CallPlacement, incompatible_devices_error
from plax_transforms.lowering import LoweringResult
from plax_transforms.mlir_context import module_to_bytecode, module_to_string


def out_info(closed: ClosedJaxpr, out_tree) -> Any:
    """The output pytree as `ShapeDtypeStruct`s."""
    return tree_util.tree_unflatten(out_tree, [
        ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals])


class Traced:
    """A traced call: its Jaxpr and output structure; `.lower()` continues."""

    def __init__(self, jaxpr: ClosedJaxpr, in_tree, out_tree, lower_fn):
        self.jaxpr = jaxpr
        self.in_tree = in_tree
        self.out_tree = out_tree
        self._lower_fn = lower_fn

    @property
    def out_info(self) -> Any:
        return out_info(self.jaxpr, self.out_tree)

    def lower(self) -> Lowered:
        return self._lower_fn()

    def __repr__(self):
        return f"Traced(jaxpr=\n{self.jaxpr})"


class Lowered:
    """A lowered call: a StableHLO module for one platform and its calling convention."""

    def __init__(self, lowering: LoweringResult, jaxpr: ClosedJaxpr, in_tree, out_tree,
                 placement: CallPlacement):
        self._lowering = lowering
        self._jaxpr = jaxpr
        self.in_tree = in_tree
        self.out_tree = out_tree
        self._placement = placement

    @property
    def out_info(self) -> Any:
        return out_info(self._jaxpr, self.out_tree)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The module as StableHLO text (default), or as XLA HLO text (`dialect="hlo"`).

        `debug_info=True` adds MLIR locations: the user's source lines and the
        argument names.
        """
        if _dialect(dialect) == "stablehlo":
            return module_to_string(self._lowering.module, debug_info=debug_info)
        return self.compiler_ir("hlo").as_hlo_text()

    def compiler_ir(self, dialect: str | None = None):
        """The `ir.Module` (default, `"stablehlo"`) or an XLA `XlaComputation` (`"hlo"`)."""
        if _dialect(dialect) == "stablehlo":
            return self._lowering.module
        return _jax.mlir.mlir_module_to_xla_computation(
            module_to_bytecode(self._lowering.module), use_tuple_args=False,
            return_tuple=False)

    def compile(self) -> Compiled:
        compiled = executing.compile_lowering(self._lowering, self._placement)
        return Compiled(compiled, self._jaxpr, self.in_tree, self.out_tree,
                        self._placement.committed)

    def __repr__(self):
        return (f"Lowered({self._lowering.name} for devices "
                f"{[d.id for d in self._placement.devices]})")


def _dialect(dialect: str | None) -> str:
    if dialect in (None, "stablehlo"):
        return "stablehlo"
    if dialect == "hlo":
        return "hlo"
    raise ValueError(f"unknown dialect {dialect!r}; expected 'stablehlo' or 'hlo'")


class Compiled:
    """A compiled call: run it with the dynamic arguments of the lowered call."""

    def __init__(self, compiled: executing.CompiledJaxpr, jaxpr: ClosedJaxpr, in_tree,
                 out_tree, committed: bool):
        self._compiled = compiled
        self._jaxpr = jaxpr
        self.in_tree = in_tree
        self.out_tree = out_tree
        self._committed = committed

    @property
    def out_info(self) -> Any:
        return out_info(self._jaxpr, self.out_tree)

    @property
    def input_shardings(self) -> Any:
        """The shardings the executable expects, as `(args, kwargs)` of the dynamic
        arguments (an input the computation does not use gets the first device)."""
        compiled = self._compiled
        by_input = dict(zip(compiled.kept_var_idx, compiled.in_shardings))
        unused = executing.device_sharding(compiled.device)
        n_extra = len(self._jaxpr.jaxpr.invars) - self.in_tree.num_leaves
        flat = [by_input.get(i + n_extra, unused) for i in range(self.in_tree.num_leaves)]
        return tree_util.tree_unflatten(self.in_tree, flat)

    @property
    def output_shardings(self) -> Any:
        """The shardings of the outputs, in the output pytree."""
        return tree_util.tree_unflatten(self.out_tree, list(self._compiled.out_shardings))

    def as_text(self) -> str:
        """The optimized HLO module XLA produced."""
        return self._compiled.executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        """XLA's estimates for the executable: `flops`, `bytes accessed`, ..."""
        return self._compiled.executable.cost_analysis()

    def memory_analysis(self) -> Any:
        return self._compiled.executable.memory_analysis()

    def __call__(self, *args, **kwargs):
        flat, in_tree = tree_util.tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(f"Compiled function called with arguments of pytree structure "
                            f"{in_tree}, but it was compiled for {self.in_tree} (static "
                            "arguments are not passed to a compiled function)")
        self._check_types(flat)
        placement = executing.place_call(flat)
        devices = self._compiled.devices
        if placement.committed and placement.devices != devices:
            raise incompatible_devices_error([(devices, "the compiled function"),
                                              (placement.devices, "its arguments")])
        outs = self._compiled(flat, self._committed or placement.committed)
        return tree_util.tree_unflatten(self.out_tree, outs)

    def _check_types(self, flat: Sequence[Any]) -> None:
        dbg = self._jaxpr.jaxpr.debug_info
        errors = []
        for i, (x, expected) in enumerate(zip(flat, self._jaxpr.in_avals)):
            got = get_aval(x)
            if (got.shape, got.dtype) != (expected.shape, expected.dtype):
                name = (dbg.safe_arg_name(i) if dbg else "") or f"argument {i}"
                errors.append(f"{name} compiled with {expected.str_short()} and called with "
                              f"{got.str_short()}")
        if errors:
            raise TypeError("Argument types differ from the types for which this computation "
                            "was compiled: " + "; ".join(errors))

    def __repr__(self):
        return (f"Compiled({self._compiled.name} on devices "
                f"{[d.id for d in self._compiled.devices]})")
