"""The long differential run: plax against JAX on generated cases, as a table.

    python tests/differential/run_fuzz.py --cases 5000 [--seed 0] [--family indexing]

`fuzz_cases.generate` draws the distinct cases first (the same ones for the same
seed on every run), then each runs on plax and on JAX in worker subprocesses.
Prints the count per outcome category, per family and mode, and examples of every
difference. Exits non-zero when plax crashed, hung, raised an internal error or
silently returned different values. `--record` writes each case's outcome, one JSON
line per case, so two runs can be compared case by case.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import fuzz_cases  # noqa: E402
import fuzz_runner  # noqa: E402


def run(cases: list[dict], progress: bool = True, record=None) -> fuzz_runner.Report:
    """Run every case on both libraries; the report of what happened."""
    report = fuzz_runner.Report()
    plax_worker, jax_worker = fuzz_runner.Worker("plax"), fuzz_runner.Worker("jax")
    start = time.time()
    try:
        for case in cases:
            mine, theirs = fuzz_runner.run_both(plax_worker, jax_worker, case)
            category, detail = fuzz_runner.classify(case, mine, theirs)
            report.add(case, category, detail)
            if record is not None:
                record.write(json.dumps({"case": case, "category": category,
                                         "detail": detail}) + "\n")
            if progress and report.total % 250 == 0:
                print(f"  {report.total} cases, {time.time() - start:.0f} s", file=sys.stderr)
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
    parser.add_argument("--record", type=argparse.FileType("w"),
                        help="write each case and its outcome here (JSON lines)")
    args = parser.parse_args()
    cases = fuzz_cases.generate(args.cases, args.seed, args.family)
    report = run(cases, record=args.record)
    print(report.table(examples=args.examples))
    return 1 if any(report.counts[c] for c in fuzz_runner.FAILING) else 0


if __name__ == "__main__":
    sys.exit(main())
