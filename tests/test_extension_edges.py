"""The rough edges a third-party primitive author meets: a module that fails to import
after defining a primitive, a notebook cell defining one twice, rules that return the
wrong shape of result, and what `check_primitive` checks without declared dtypes."""
from __future__ import annotations

import importlib
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.extend.constructors import FLOAT, hlo_rule, unary
from plax.extend import lookup
from plax.extend.core import Primitive, PrimitiveIdError, ShapedArray
from plax.extend.mlir import hlo
from plax.test_util import check_primitive

BROKEN = textwrap.dedent('''
    from plax.extend.core import Primitive, ShapedArray
    op_p = Primitive("brokenpkg_{tag}.op")
    op_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    import a_module_that_is_not_installed_{tag}  # the real problem
''')


def test_a_module_failing_after_defining_a_primitive_reports_its_own_error_again(
        tmp_path, monkeypatch):
    (tmp_path / "brokenpkg_a.py").write_text(BROKEN.format(tag="a"))
    monkeypatch.syspath_prepend(str(tmp_path))
    for _ in range(2):  # a retry (or the next entry point importing it) re-runs it
        with pytest.raises(ModuleNotFoundError, match="a_module_that_is_not_installed_a"):
            importlib.import_module("brokenpkg_a")
    # Once fixed, the module imports and its primitive is the one registered.
    (tmp_path / "brokenpkg_a.py").write_text(
        BROKEN.format(tag="a").replace("import a_module_that_is_not_installed_a", ""))
    importlib.invalidate_caches()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # replacing a failed import's primitive is quiet
        module = importlib.import_module("brokenpkg_a")
    assert lookup("brokenpkg_a.op") is module.op_p
    sys.modules.pop("brokenpkg_a", None)


def test_a_broken_plugin_entry_point_shows_the_import_error_every_time(tmp_path):
    # Two entry points load the same broken module: both report its ImportError.
    package = tmp_path / "site"
    package.mkdir()
    (package / "brokenpkg_b.py").write_text(BROKEN.format(tag="b"))
    info = package / "brokenpkg_b-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenpkg-b\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[plax.primitives]\nbroken = brokenpkg_b\n\n[plax.lowering]\nbroken = brokenpkg_b\n")
    import subprocess
    code = textwrap.dedent('''
        import warnings, plax
        from plax.extend.registry import failures, load_group
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            load_group("plax.primitives"); load_group("plax.lowering")
        print(failures("plax.primitives")["broken"])
        print(failures("plax.lowering")["broken"])
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(package)},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all("ModuleNotFoundError" in line and
                                   "a_module_that_is_not_installed_b" in line for line in lines)
    assert "PrimitiveIdError" not in done.stdout


CELL = """
from plax.extend.constructors import FLOAT, unary
from plax.extend.mlir import hlo
twice_p = unary("notebook.twice", dtypes=FLOAT, lower=lambda ctx, x: hlo.add(x, x))
"""


def _run_cell(namespace: dict):
    exec(compile(CELL, "<cell>", "exec"), namespace)


def test_rerunning_a_cell_replaces_the_primitive_with_a_warning(monkeypatch):
    notebook = types.ModuleType("notebook_main")  # a kernel's __main__
    monkeypatch.setitem(sys.modules, "notebook_main", notebook)
    _run_cell(notebook.__dict__)
    first = notebook.twice_p
    with pytest.warns(RuntimeWarning, match="primitive 'notebook.twice' is defined again by "
                                            "notebook_main: the new definition replaces"):
        _run_cell(notebook.__dict__)
    assert notebook.twice_p is not first and lookup("notebook.twice") is notebook.twice_p
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(plax.jit(notebook.twice_p.bind)(x), 2 * x)
    # Another module taking the id is still an error, naming the owner.
    with pytest.raises(PrimitiveIdError, match="'notebook.twice' is already defined by "
                                               "notebook_main"):
        Primitive("notebook.twice")


def _single(id: str):
    prim = Primitive(id)
    prim.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    prim.def_lowering(lambda ctx, x: hlo.negate(x))
    return prim


def test_abstract_eval_returning_a_tuple_names_the_primitive():
    prim = Primitive("tests_edges.tuple_eval")
    prim.def_abstract_eval(lambda x: (ShapedArray(x.shape, x.dtype),))
    with pytest.raises(TypeError, match=r"the abstract evaluation rule of primitive "
                       r"'tests_edges.tuple_eval' returned tuple .*multiple_results=True"):
        plax.jit(prim.bind)(jnp.ones(2))
    many = Primitive("tests_edges.many_eval", multiple_results=True)
    many.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    with pytest.raises(TypeError, match="'tests_edges.many_eval' returned ShapedArray.*a list "
                                        "of abstract values"):
        plax.make_jaxpr(many.bind)(jnp.ones(2))


def test_single_output_jvp_and_batching_rules_returning_lists_name_the_primitive():
    prim = _single("tests_edges.listy")
    prim.def_jvp(lambda primals, tangents: ([prim.bind(primals[0])], [-tangents[0]]))
    prim.def_batching(lambda axis, args, dims: ([prim.bind(args[0])], [dims[0]]))
    with pytest.raises(TypeError, match=r"jvp rule of primitive 'tests_edges.listy' returned "
                                        r"\(list, list\); .*\(output, tangent\)"):
        plax.jvp(prim.bind, (jnp.ones(2),), (jnp.ones(2),))
    with pytest.raises(TypeError, match=r"batching rule of primitive 'tests_edges.listy' "
                                        r"returned \(list, list\); .*an int or not_mapped"):
        plax.vmap(prim.bind)(jnp.ones((3, 2)))
    # The documented conventions: (output, tangent) and (output, dim), two values.
    good = _single("tests_edges.values")
    good.def_jvp(lambda primals, tangents: (good.bind(primals[0]), -tangents[0]))
    good.def_batching(lambda axis, args, dims: (good.bind(args[0]), dims[0]))
    out, tangent = plax.jvp(good.bind, (jnp.ones(2),), (jnp.full(2, 3.0),))
    np.testing.assert_array_equal(tangent, [-3.0, -3.0])
    np.testing.assert_array_equal(plax.vmap(good.bind)(jnp.ones((3, 2))), -np.ones((3, 2)))


def test_check_primitive_checks_dtypes_only_when_they_are_declared():
    declared = unary("tests_edges.declared_neg", dtypes=FLOAT, lower=hlo_rule("negate"),
                     jvp=lambda primals, tangents: (declared.bind(primals[0]), -tangents[0]))
    undeclared = _single("tests_edges.undeclared_neg")
    undeclared.def_jvp(lambda primals, tangents: (undeclared.bind(primals[0]), -tangents[0]))
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    ran = check_primitive(declared, x, skip=("jvp2", "vjp", "transpose"))
    assert "dtypes: 4 accepted, 11 rejected" in ran
    ran = check_primitive(undeclared, x, skip=("jvp2", "vjp", "transpose"))
    assert ran and not any(name.startswith("dtypes") for name in ran)
