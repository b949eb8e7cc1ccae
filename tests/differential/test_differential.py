"""plax against JAX on a few hundred generated calls, the same ones on every run.

Each case runs on plax and on JAX 0.10.2 in worker subprocesses. The test fails when
plax crashes, hangs, raises an internal error or returns different values on any
case (each is listed), or when plax's exception classes are not JAX's (or
subclasses) in 99 % of the cases where both raise (JAX's internal errors left out).
`run_fuzz.py` is the long run (README).
"""
from __future__ import annotations

import importlib.util

import pytest

import fuzz_cases
import fuzz_runner

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="JAX is not installed")

CASES = 300  # about 40 s with both workers on 2 cores


def test_plax_agrees_with_jax_on_generated_calls():
    cases = fuzz_cases.generate(CASES, seed=0)
    assert len(cases) == CASES
    report = fuzz_runner.Report()
    plax_worker, jax_worker = fuzz_runner.Worker("plax"), fuzz_runner.Worker("jax")
    try:
        for case in cases:
            report.add(case, *fuzz_runner.classify(
                case, *fuzz_runner.run_both(plax_worker, jax_worker, case)))
    finally:
        plax_worker.close()
        jax_worker.close()
    print(report.table(examples=2))
    failures = [(case, category, detail) for category in fuzz_runner.FAILING
                for case, detail in report.examples.get(category, [])]
    assert not failures, failures
    assert report.counts[fuzz_runner.SAME_VALUE] > CASES // 4  # the run did compare values
    assert report.class_agreement() >= 0.99, report.table()
