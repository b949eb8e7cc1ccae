"""vmap of every lax primitive equals stacking the primitive over the slices.

The cases are the lowering table's (tests/test_lowering.py: one case per primitive,
with valid inputs); each argument is batched with two different examples (the sample
and its flip), so batched indices, batched shapes of every rank and multi-output
primitives are all exercised. Per dtype, one jitted function computes every case both
ways, so the whole table costs a dozen compilations.
"""
import numpy as np
import pytest
from test_lowering import _TOLERANCE, CASES, X64_ONLY

import plax
from plax import tree_util

BATCH = 2


def _two_examples(args):
    return tuple(np.stack([a, np.flip(a)]) if np.ndim(a) else np.stack([a, a])
                 for a in args)


def _vmapped_and_looped(cases, batches):
    out = []
    for case, batch in zip(cases, batches):
        mapped = plax.vmap(case.fn)(*batch)
        looped = [case.fn(*(x[i] for x in batch)) for i in range(BATCH)]
        out.append((mapped, tree_util.tree_map(lambda *xs: plax.numpy.stack(xs), *looped)))
    return out


def _cases_by_dtype():
    groups = {}
    for case in CASES:
        groups.setdefault(case.dtypes[0], []).append(case)
    return groups


@pytest.fixture(scope="module")
def results():
    computed = {}
    for dt, cases in _cases_by_dtype().items():
        with plax.enable_x64(dt in X64_ONLY):
            batches = [_two_examples(case.args(dt)) for case in cases]
            outs = plax.jit(lambda b, cases=cases: _vmapped_and_looped(cases, b))(batches)
        for case, (mapped, looped) in zip(cases, outs):
            computed[case.name] = (mapped, looped)
    return computed


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_vmap_equals_stacking_over_slices(case, results):
    mapped, looped = results[case.name]
    for m, s in zip(tree_util.tree_leaves(mapped), tree_util.tree_leaves(looped)):
        assert m.shape == s.shape and m.dtype == s.dtype
        tol = _TOLERANCE.get(np.dtype(m.dtype), 0)  # XLA may fuse the two ways differently
        np.testing.assert_allclose(np.asarray(m), np.asarray(s), rtol=tol, atol=tol)
