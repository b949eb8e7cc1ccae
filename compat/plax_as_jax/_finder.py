"""The import hook: `jax` and `jax.<sub>` become alias modules of plax.

Each alias is a module of its own named `jax...` (plax's modules are never renamed,
patched or registered under another name): it forwards attribute reads to its plax
counterpart (`jax.numpy` → `plax.numpy`), and names the counterpart lacks come from
an overlay of the same path in `plax_as_jax.overlay` (`jax.interpreters.ad`,
`jax.extend.linear_util`, the version attributes...). A submodule read as an
attribute (`jax.numpy.linalg`) is itself an alias. `jax._src.*` has no plax
counterpart: only its overlays exist (the private names libraries reach for).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types

OVERLAY = "plax_as_jax.overlay"
_MISSING = object()


def _plax_name(alias: str) -> str | None:
    """`jax.numpy.linalg` → `plax.numpy.linalg`; None under `jax._src` (no counterpart).
    A submodule of an alias standing for another module is that module's submodule
    (`jax.extend.mlir.dialects.func` → `jaxlib.mlir.dialects.func`)."""
    parent_name, _, last = alias.rpartition(".")
    parent = sys.modules.get(parent_name)
    if isinstance(parent, AliasModule) and parent._plax_module is not None:
        return f"{parent._plax_module.__name__}.{last}"
    rest = alias[len("jax"):]
    if rest == "._src" or rest.startswith("._src."):
        return None
    return "plax" + rest


def _find_module(name: str | None) -> types.ModuleType | None:
    """The module `name` if it exists (imported), else None; a module that exists but
    fails to import raises."""
    if name is None:
        return None
    if name in sys.modules:
        return sys.modules[name]
    parent, _, last = name.rpartition(".")
    if parent:
        parent_module = _find_module(parent)
        if parent_module is None:
            return None
        value = getattr(parent_module, last, None)
        if isinstance(value, types.ModuleType):
            return value
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name is not None and (name == err.name or name.startswith(err.name + ".")):
            return None
        raise


class AliasModule(types.ModuleType):
    """`jax...`: the overlay's names first, then the plax module's; submodules of
    either are aliases too."""

    def __init__(self, name: str, plax_module, overlay):
        super().__init__(name, getattr(overlay or plax_module, "__doc__", None))
        object.__setattr__(self, "_plax_module", plax_module)
        object.__setattr__(self, "_overlay", overlay)
        if plax_module is None or hasattr(plax_module, "__path__") or (
                overlay is not None and hasattr(overlay, "__path__")):
            self.__path__ = []  # a package: `import jax.<name>.<sub>` is asked of the finder

    def __getattr__(self, name: str):
        if name.startswith("__") and name not in ("__version__", "__version_info__", "__all__",
                                                  "__array_api_version__"):
            raise AttributeError(name)
        for source in (self._overlay, self._plax_module):
            if source is None:
                continue
            value = getattr(source, name, _MISSING)
            if value is _MISSING:
                continue
            if isinstance(value, types.ModuleType):
                value = importlib.import_module(f"{self.__name__}.{name}")
            elif name == "__all__":
                value = list(value)
            if name in vars(source):  # not computed by a module __getattr__ on each read
                self.__dict__[name] = value
            return value
        if _find_module(OVERLAY + f"{self.__name__}.{name}"[len("jax"):]) is not None:
            return importlib.import_module(f"{self.__name__}.{name}")  # as JAX imports it
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __repr__(self):
        target = getattr(self._plax_module, "__name__", None)
        return f"<module {self.__name__!r} (plax alias{' of ' + repr(target) if target else ''})>"

    def __dir__(self):
        names = set(self.__dict__)
        for source in (self._overlay, self._plax_module):
            if source is not None:
                names |= set(dir(source))
        return sorted(names)


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module: AliasModule):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class AliasFinder(importlib.abc.MetaPathFinder):
    """Answers imports of `jax` and `jax.<sub>` (nothing else: `jaxlib` stays jaxlib)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "jax" and not fullname.startswith("jax."):
            return None
        overlay = _find_module(OVERLAY + fullname[len("jax"):])
        plax_module = getattr(overlay, "PLAX_MODULE", _MISSING)
        plax_module = _find_module(_plax_name(fullname) if plax_module is _MISSING
                                   else plax_module)
        if plax_module is None and overlay is None:
            return None
        module = AliasModule(fullname, plax_module, overlay)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module),
                                               is_package=hasattr(module, "__path__"))


def installed() -> bool:
    return any(isinstance(f, AliasFinder) for f in sys.meta_path)


def install() -> None:
    """Turns the alias on in this process. Refused once real JAX is imported: the two
    would then be mixed (arrays of one given to the other)."""
    if installed():
        return
    real = sorted(m for m in sys.modules if m == "jax" or m.startswith("jax."))
    if real and not isinstance(sys.modules.get("jax"), AliasModule):
        raise RuntimeError("plax_as_jax.install() must run before `jax` is imported; "
                           f"already imported: {', '.join(real[:5])}")
    sys.meta_path.insert(0, AliasFinder())


def uninstall() -> None:
    """Turns the alias off and forgets the alias modules (for tests: modules that
    imported `jax` while it was on keep what they got)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, AliasFinder)]
    for name in [m for m, mod in sys.modules.items() if isinstance(mod, AliasModule)]:
        del sys.modules[name]
