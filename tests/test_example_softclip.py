"""The example third-party package `examples/softclip` (installed by
requirements-dev.txt, as its README says): found through its entry point, right
under jit, grad, vmap, jacfwd and inside scan, its rules consistent by
`check_primitive`, and written on the public API alone."""
from __future__ import annotations

import ast
import importlib.metadata as metadata
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import softclip
from softclip import softclip_p, softclip_with_slope, softclip_with_slope_p
from test_import_direction import imported_modules
from workspace_layout import ROOT

import plax
from plax import extend, lax
from plax.extend.core import Primitive, PrimitiveIdError
from plax.test_util import check_primitive

EXAMPLE = ROOT / "examples" / "softclip"
X = np.array([[-3.0, -0.5, 0.0], [0.25, 1.5, 4.0]], np.float32)
LIMIT = 2.0


def reference(x, limit=LIMIT):
    return limit * np.tanh(np.asarray(x, np.float64) / limit)


def reference_slope(x, limit=LIMIT):
    return 1 - np.tanh(np.asarray(x, np.float64) / limit) ** 2


def test_installed_from_the_example_folder():
    dist = metadata.distribution("plax-softclip")
    assert Path(softclip.__file__).resolve().parent == EXAMPLE / "softclip"
    assert [(ep.group, ep.name, ep.value) for ep in dist.entry_points] == [
        ("plax.primitives", "softclip", "softclip")]


def test_found_through_its_entry_point_without_an_import():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        from plax import extend
        ids = extend.list_primitives()
        assert "softclip" in sys.modules  # the registry imported it
        print(ids.count("softclip.softclip"), ids.count("softclip.softclip_with_slope"))
        print(extend.rules_of("softclip.softclip_with_slope"))
        print(extend.supported_transforms("softclip.softclip"))
    """)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    counts, rules, transforms = proc.stdout.splitlines()
    assert counts == "1 1"
    assert rules == ("{'abstract_eval': 'plax-softclip', 'lowering': 'plax-softclip', "
                     "'jvp': 'plax-softclip', 'batching': 'plax-softclip'}")
    assert transforms == "['eager', 'jit', 'jvp', 'vjp', 'vmap']"


def test_values_eagerly_and_under_jit():
    np.testing.assert_allclose(softclip.softclip(X, LIMIT), reference(X), rtol=1e-6)
    value, slope = plax.jit(softclip_with_slope, static_argnums=1)(X, LIMIT)
    np.testing.assert_allclose(value, reference(X), rtol=1e-6)
    np.testing.assert_allclose(slope, reference_slope(X), rtol=1e-5, atol=1e-6)
    assert plax.make_jaxpr(softclip.softclip)(X).eqns[0].primitive is softclip_p


def test_grad_jacfwd_and_vmap():
    grad = plax.grad(lambda x: softclip.softclip(x, LIMIT).sum())(X)
    np.testing.assert_allclose(grad, reference_slope(X), rtol=1e-5, atol=1e-6)
    x = X[0]
    jac = plax.jit(plax.jacfwd(lambda v: softclip_with_slope(v, LIMIT)))(x)
    np.testing.assert_allclose(jac[0], np.diag(reference_slope(x)), rtol=1e-5, atol=1e-6)
    curvature = -2 * reference(x) * reference_slope(x) / LIMIT**2
    np.testing.assert_allclose(jac[1], np.diag(curvature), rtol=1e-5, atol=1e-6)
    hessian = plax.jit(plax.hessian(lambda v: softclip.softclip(v, LIMIT).sum()))(x)
    np.testing.assert_allclose(hessian, np.diag(curvature), rtol=1e-5, atol=1e-6)
    batched = plax.vmap(softclip_with_slope, in_axes=(1, None), out_axes=1)(X, LIMIT)
    np.testing.assert_allclose(batched[0], reference(X), rtol=1e-6)


def test_inside_scan_and_differentiated_through_it():
    def clipped_sum(x):
        def step(carry, row):
            return softclip.softclip(carry + row, LIMIT), softclip_with_slope(carry, LIMIT)[1]
        return lax.scan(step, np.zeros(3, np.float32), x)

    carry, slopes = plax.jit(clipped_sum)(X)
    want = reference(reference(X[0]) + X[1])
    np.testing.assert_allclose(carry, want, rtol=1e-6)
    np.testing.assert_allclose(slopes[1], reference_slope(reference(X[0])), rtol=1e-5)
    grad = plax.grad(lambda x: clipped_sum(x)[0].sum())(X)
    inner = reference(X[0]) + X[1]
    np.testing.assert_allclose(grad[1], reference_slope(inner), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad[0], reference_slope(inner) * reference_slope(X[0]),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("prim", [softclip_p, softclip_with_slope_p], ids=lambda p: p.name)
def test_rules_agree_with_each_other(prim):
    ran = check_primitive(prim, X, limit=LIMIT)
    assert ran == ["abstract_eval", "jit", "jvp", "jvp2", "vjp", "batching: 2 in_axes",
                   "dtypes: 4 accepted, 11 rejected"]
    with plax.enable_x64(True):  # tighter derivative checks
        check_primitive(prim, X.astype(np.float64), limit=0.5, skip=("dtypes",))


def test_bad_input_is_reported():
    with pytest.raises(TypeError, match="softclip does not accept dtype int32"):
        softclip.softclip(np.arange(3, dtype=np.int32))
    with pytest.raises(TypeError, match="softclip_with_slope does not accept dtype bool"):
        softclip_with_slope(np.ones(2, bool))
    with pytest.raises(ValueError, match="limit must be positive, got -1.0"):
        softclip.softclip(X, -1)


def test_misspelled_rule_kind_and_taken_id_raise():
    with pytest.raises(ValueError, match="unknown rule kind 'jpv' for primitive "
                       "'softclip.softclip'; the kinds are abstract_eval, impl, jvp"):
        softclip_p.define_rule("jpv", lambda primals, tangents, **params: None)
    with pytest.raises(PrimitiveIdError, match="'softclip.softclip_with_slope' is already "
                       "defined by softclip"):
        Primitive("softclip.softclip_with_slope")
    assert extend.rule_modules(softclip_p) == dict.fromkeys(
        ["abstract_eval", "lowering", "batching", "jvp"], "softclip")


def test_uses_only_the_public_api():
    for file in sorted(EXAMPLE.rglob("*.py")):
        tree = ast.parse(file.read_text(), str(file))
        for line, name in imported_modules(tree, "softclip"):
            top = name.split(".")[0]
            assert not top.startswith("plax_") and not name.startswith("plax._src"), (
                f"{file.relative_to(ROOT)}:{line} imports {name}")
