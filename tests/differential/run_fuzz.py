"""The long differential run: plax against JAX on generated cases, as a table.

    python tests/differential/run_fuzz.py --cases 5000 [--seed 0] [--family indexing]

Cases come from `fuzz_cases` through hypothesis (the project's profiles, generation
only: every case is counted, none is shrunk); each runs on plax and on JAX in
worker subprocesses. Prints the count per outcome category, per family and mode,
and examples of every difference. Exits non-zero when plax crashed, hung, raised
an internal error or silently returned different values.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import hypothesis  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fuzz_cases  # noqa: E402
import fuzz_runner  # noqa: E402
from hypothesis_profiles import setup_hypothesis  # noqa: E402

FAILING = (fuzz_runner.CRASH, fuzz_runner.HANG, fuzz_runner.INTERNAL,
           fuzz_runner.VALUES_DIFFER)


def run(n_cases: int, seed: int, families: list[str] | None, progress: bool = True
        ) -> fuzz_runner.Report:
    """Generate and run `n_cases` cases; the report of what happened."""
    chosen = families or list(fuzz_cases.FAMILIES)
    strategy = st.one_of(*(fuzz_cases.FAMILIES[f]() for f in chosen))
    report = fuzz_runner.Report()
    plax_worker, jax_worker = fuzz_runner.Worker("plax"), fuzz_runner.Worker("jax")
    start = time.time()

    @hypothesis.settings(max_examples=n_cases, database=None, phases=[hypothesis.Phase.generate],
                         suppress_health_check=list(hypothesis.HealthCheck), deadline=None)
    @hypothesis.seed(seed)
    @hypothesis.given(case=strategy)
    def one(case):
        mine, theirs = fuzz_runner.run_both(plax_worker, jax_worker, case)
        report.add(case, *fuzz_runner.classify(case, mine, theirs))
        if progress and report.total % 250 == 0:
            print(f"  {report.total} cases, {time.time() - start:.0f} s", file=sys.stderr)

    try:
        one()
    finally:
        plax_worker.close()
        jax_worker.close()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--family", action="append", choices=sorted(fuzz_cases.FAMILIES),
                        help="only these families (repeatable)")
    parser.add_argument("--examples", type=int, default=5,
                        help="examples printed per difference category")
    args = parser.parse_args()
    setup_hypothesis()
    report = run(args.cases, args.seed, args.family)
    print(report.table(examples=args.examples))
    return 1 if any(report.counts[c] for c in FAILING) else 0


if __name__ == "__main__":
    sys.exit(main())
