"""The plugin registry and the extension contract: a broken, mismatched or wrongly
typed plugin (a fake installed distribution) is reported with its distribution and
skipped without taking the others down; rule kinds are a closed set, primitive ids
are namespaced and unique; the coverage table says which rules each primitive has,
from where, and so which transforms work. A real third-party package joining
through its entry point is tests/test_example_softclip.py."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import plax
from plax import extend
from plax.extend import registry as plugins
from plax.extend.core import RULE_KINDS, Primitive, PrimitiveIdError


def _fake_distribution(root: pathlib.Path, name: str, entry_points: str, *,
                       requires: str = "") -> None:
    """Announce entry points the way an installed wheel does (a dist-info folder)."""
    info = root / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    requires = "".join(f"Requires-Dist: {r}\n" for r in requires.split(",") if r)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n{requires}")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def _run(code: str, *paths) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_broken_plugin_is_reported_with_its_distribution_and_skipped(tmp_path):
    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('boom at import')\n")
    _fake_distribution(tmp_path, "plax-broken", """
        [plax.primitives]
        broken = broken_plugin
    """)
    proc = _run("""
        import warnings
        from plax.extend import list_primitives, registry
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            names = list_primitives()
        # the installed plugins (the example package, the standard library) still load
        assert "softclip.softclip" in names and "lax.sin" in names
        assert any("boom at import" in str(w.message) for w in caught), caught
        print(registry.failures("plax.primitives"))
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "from plax-broken" in proc.stdout and "RuntimeError" in proc.stdout


def test_plugin_built_for_another_kernel_version_names_both_versions(tmp_path):
    _fake_distribution(tmp_path, "plax-old-plugin", """
        [plax.primitives]
        old = old_plugin_module
    """, requires="plax==0.0.1")
    proc = _run("""
        import sys, warnings
        from plax.extend import list_primitives, registry
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            names = list_primitives()
        assert "lax.sin" in names and "softclip.softclip" in names
        assert "old_plugin_module" not in sys.modules  # checked before it is imported
        print(registry.failures("plax.primitives")["old"])
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ("PluginVersionError: plax-old-plugin 0.1.0 requires plax==0.0.1 but plax "
            f"{plax.__version__} is installed; upgrade plax-old-plugin") in proc.stdout


def test_version_module_is_the_installed_kernel_version():
    from importlib import metadata
    import plax.version
    assert plax.version.__version__ == plax.__version__ == metadata.version("plax")
    assert plax.version.__version_info__ == tuple(map(int, plax.__version__.split(".")))


def test_entry_point_of_the_wrong_kind_is_reported_and_the_rest_works(tmp_path):
    (tmp_path / "not_a_module.py").write_text("def numpy2():\n    pass\n")
    _fake_distribution(tmp_path, "plax-confused", """
        [plax.modules]
        numpy2 = not_a_module:numpy2
    """)
    proc = _run("""
        import warnings
        import plax
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                import plax.numpy2
            except ImportError as err:
                print("error:", err)
        print(plax.numpy.add(1, 2))
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "from plax-confused failed to load: TypeError: the entry point must yield a module" \
        in proc.stdout
    assert proc.stdout.strip().endswith("3")


def test_missing_name_names_the_package_to_install():
    with pytest.raises(plugins.PluginMissingError, match="install 'plax-transforms'"):
        plugins.resolve("plax.transforms", "not_a_plax_function")
    with pytest.raises(AttributeError, match="no attribute 'not_a_plax_function'"):
        plax.not_a_plax_function  # noqa: B018


def test_rule_kinds_are_a_closed_set():
    prim = Primitive("tests.closed_kinds")
    with pytest.raises(ValueError, match="unknown rule kind 'jpv'.*the kinds are abstract_eval"):
        prim.define_rule("jpv", lambda primals, tangents: None)
    with pytest.raises(ValueError, match="only lowering rules are per platform"):
        prim.define_rule("jvp", lambda primals, tangents: None, platform="cpu")
    assert {"abstract_eval", "jvp", "transpose", "batching", "lowering"} <= set(RULE_KINDS)


def test_primitive_ids_are_namespaced_and_unique():
    assert extend.lookup("lax.sin").name == "sin"  # loads the standard primitives
    with pytest.raises(PrimitiveIdError, match="namespaced"):
        Primitive("softclip")
    first = Primitive("tests.taken_id")
    # The module that defined it may define it again (a re-run): with a warning.
    with pytest.warns(RuntimeWarning, match="'tests.taken_id' is defined again by "):
        second = Primitive("tests.taken_id")
    assert extend.lookup("tests.taken_id") is second is not first
    with pytest.raises(PrimitiveIdError, match="'lax.sin' is already defined by "
                                               "plax_stdlib.lax.elementwise"):
        Primitive("lax.sin")


def test_standard_primitive_rules_are_listed_with_their_distribution():
    rules = extend.rules_of("lax.sin")
    assert rules["abstract_eval"] == "plax-stdlib" and rules["lowering"] == "plax-stdlib"
    assert extend.rule_modules("lax.sin")["jvp"] == "plax_stdlib.lax.elementwise"
    assert extend.supported_transforms("lax.sin") == ["eager", "jit", "jvp", "vjp", "vmap"]


@pytest.mark.parametrize("prim_id", ["lax.scan", "lax.cond", "lax.while", "plax.jit",
                                     "plax.custom_vjp_call", "plax.custom_jvp_call",
                                     "plax.remat2"])
def test_every_rule_of_a_higher_order_primitive_comes_from_one_module(prim_id):
    modules = extend.rule_modules(prim_id)
    assert {"abstract_eval", "jvp", "batching"} <= set(modules)
    assert len(set(modules.values())) == 1, modules


def test_rules_of_higher_order_primitives_are_listed_before_first_use():
    proc = _run("""
        import sys
        from plax.extend import rules_of
        print(sorted(rules_of("plax.jit")), sorted(rules_of("lax.scan")))
        assert "plax_transforms.autodiff_api" not in sys.modules
    """)
    assert proc.returncode == 0, proc.stderr
    for kind in ("jvp", "transpose", "batching", "partial_eval", "lowering"):
        assert proc.stdout.count(f"'{kind}'") == 2, proc.stdout


def test_the_coverage_table_lists_every_primitive():
    proc = subprocess.run([sys.executable, "-m", "plax.extend"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["primitive", "defined", "by"]
    by_id = {line.split()[0]: line for line in lines[2:] if line.strip()}
    # (less the ids that tests and doctests run in this process defined)
    assert {p for p in extend.list_primitives()
            if not p.startswith(("tests.", "docs_example."))} <= set(by_id)
    assert by_id["lax.sin"].split()[1] == "plax-stdlib"
    assert by_id["lax.sin"].rstrip().endswith("eager jit jvp vjp vmap")
    assert by_id["lax.sin"].split()[2] == "plax_stdlib.lax.elementwise"
    for prim_id, module in [("plax.jit", "plax_transforms.jit_primitive"),
                            ("lax.scan", "plax_stdlib.lax.control_flow.scan"),
                            ("lax.cond", "plax_stdlib.lax.control_flow.cond"),
                            ("lax.while", "plax_stdlib.lax.control_flow.loops"),
                            ("plax.custom_vjp_call", "plax_transforms.custom_derivatives")]:
        assert by_id[prim_id].split()[1:3] == [extend.distribution_of(module), module]
