"""The plugin registry: a third-party primitive package joins through entry points,
and a broken plugin is reported and skipped without taking the others down."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import plax
from plax._src import plugins

PLUGIN_SRC = pathlib.Path(__file__).parent / "plugin_pkg"


def _fake_distribution(root: pathlib.Path, name: str, entry_points: str) -> None:
    """Announce entry points the way an installed wheel does (a dist-info folder)."""
    info = root / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def _run(code: str, *paths) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_third_party_primitive_is_discovered_listed_and_traced(tmp_path):
    _fake_distribution(tmp_path, "plax-example-prim", """
        [plax.primitives]
        softclip = plax_example_prim
    """)
    proc = _run("""
        import sys
        import plax
        from plax.extend import list_primitives, rules_of
        assert "softclip" in list_primitives()          # found without importing it
        assert "plax_example_prim" in sys.modules
        assert rules_of("softclip") == {"abstract_eval": "plax_example_prim"}
        from plax_example_prim import softclip
        print(plax.make_jaxpr(softclip)(1.0))
        try:
            plax.make_jaxpr(softclip)(1)
        except TypeError as err:
            print("error:", err)
    """, tmp_path, PLUGIN_SRC)
    assert proc.returncode == 0, proc.stderr
    assert "b:f32[] = softclip[limit=1.0] a" in proc.stdout
    assert "error: softclip requires a floating-point input, got int32" in proc.stdout


def test_broken_plugin_is_reported_and_skipped(tmp_path):
    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('boom at import')\n")
    _fake_distribution(tmp_path, "plax-broken", """
        [plax.primitives]
        broken = broken_plugin
    """)
    _fake_distribution(tmp_path / "more", "plax-example-prim", """
        [plax.primitives]
        softclip = plax_example_prim
    """)
    proc = _run("""
        import warnings
        from plax._src import plugins
        from plax.extend import list_primitives
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            names = list_primitives()
        assert "softclip" in names and "sin" in names
        assert any("boom at import" in str(w.message) for w in caught), caught
        print(plugins.failures("plax.primitives"))
    """, tmp_path, tmp_path / "more", PLUGIN_SRC)
    assert proc.returncode == 0, proc.stderr
    assert "plax-broken" in proc.stdout and "RuntimeError" in proc.stdout


def test_missing_name_names_the_package_to_install():
    with pytest.raises(plugins.PluginMissingError, match="install 'plax-transforms'"):
        plugins.resolve("plax.transforms", "not_a_plax_function")
    with pytest.raises(AttributeError, match="no attribute 'not_a_plax_function'"):
        plax.not_a_plax_function  # noqa: B018


def test_standard_primitive_rules_are_listed_with_their_owner():
    from plax.extend import rules_of
    rules = rules_of("sin")
    assert rules["abstract_eval"] == "plax"
    assert "lowering" in rules


def test_transform_rules_of_higher_order_primitives_are_listed_before_first_use():
    proc = _run("""
        import sys
        from plax.extend import rules_of
        assert "plax_transforms.autodiff_api" not in sys.modules
        print(sorted(rules_of("jit")), sorted(rules_of("scan")))
    """)
    assert proc.returncode == 0, proc.stderr
    for kind in ("jvp", "transpose", "batching", "partial_eval", "lowering"):
        assert proc.stdout.count(f"'{kind}'") == 2, proc.stdout
