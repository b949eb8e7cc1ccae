"""The fuzzer's multi-process fault mode: random faulty runs of 2-3 processes on
127.0.0.1, and how each process ended, as a table.

    python tests/differential/fuzz_faults.py --runs 30 [--seed 0]

Each run draws the process count, the fault (`kill`, `stop`, `skip`, `count`: the
victim disagrees on num_processes, `missing`: the victim never starts, `none`), the
victim (process 0 too: the coordinator, whose loss jaxlib's clients answer with an
abort that plax intercepts), the operation the others wait in (a computation, `sync_global_devices`,
`process_allgather`) and how long the victim runs Python before its fault while the
others already wait; tests/distributed_fault_worker.py runs it. JAX 0.10.2 aborts
the survivors of `kill`/`stop`/`missing` and hangs on `skip` and `count`, so there is
no answer of JAX's to compare with: each process is held to plax's bound instead.
Outcomes: `raised` (DistributedError inside the bound), `late` (outside it), `ended`
(a clean run's normal end), `abort` (the runtime's abort or another death), `hang`
(killed at the deadline), `other` (anything else). Exits non-zero unless every
survivor of a faulty run raised in bound and every process of a clean run ended.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(os.path.dirname(HERE), "distributed_fault_worker.py")
HEARTBEAT_S, COLLECTIVE_S, INIT_S = 2.0, 3.0, 4  # the worker's timeouts
SLACK_S = 3.0
DEADLINE_S = 90
FAULTS = ("kill", "stop", "skip", "count", "missing", "none")
OPERATIONS = ("computation", "sync", "allgather")


def draw(rng: random.Random) -> dict:
    count = rng.choice((2, 3))
    return {"count": count, "fault": rng.choice(FAULTS), "victim": rng.randrange(count),
            "operation": rng.choice(OPERATIONS), "delay": rng.choice((0.0, 0.5, 1.5, 2.5))}


def bound(run: dict) -> float:
    """The latest a survivor may raise, from the worker's `after` origin."""
    fault, delay = run["fault"], run["delay"]
    if fault in ("kill", "stop"):  # a heartbeat timeout after the fault, or the
        return min(delay + HEARTBEAT_S, COLLECTIVE_S) + SLACK_S  # collective timeout
    if fault == "skip":
        return COLLECTIVE_S + SLACK_S
    return INIT_S + SLACK_S  # count, missing: at initialize


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def execute(run: dict) -> dict[int, tuple[str, str]]:
    """Each started process's (outcome, detail); the victim's too, but for a stopped
    one (killed at the end) or a missing one (never started)."""
    address = f"127.0.0.1:{free_port()}"
    env = dict(os.environ, PLAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    procs = {}
    for pid in range(run["count"]):
        if run["fault"] == "missing" and pid == run["victim"]:
            continue
        procs[pid] = subprocess.Popen(
            [sys.executable, WORKER, address, str(run["count"]), str(pid), run["fault"],
             str(run["victim"]), run["operation"], str(run["delay"]), str(INIT_S)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + DEADLINE_S
    outcomes = {}
    try:
        for pid, proc in procs.items():
            if run["fault"] == "stop" and pid == run["victim"]:
                continue
            try:
                out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                outcomes[pid] = ("hang", f"still running after {DEADLINE_S} s")
                continue
            outcomes[pid] = classify(run, pid, proc.returncode, out)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outcomes


def classify(run: dict, pid: int, code: int, out: str) -> tuple[str, str]:
    raised = [line[line.index("RAISED {") + 7:] for line in out.splitlines()
              if "RAISED {" in line]
    if code == 3 and raised and "FINALLY" in out:
        report = json.loads(raised[-1])
        first = report["message"].split("\n", 1)[0]
        if report["after"] <= bound(run):
            return "raised", f"{report['after']:.2f} s: {first}"
        return "late", f"{report['after']:.2f} s > {bound(run):.1f} s: {first}"
    if code == 0 and "RESULT" in out:
        return "ended", ""
    if code < 0 or code == 134 or "Terminating process" in out:
        return "abort", f"status {code}: {out[-300:]}"
    return "other", f"status {code}: {out[-300:]}"


def expected(run: dict, pid: int) -> set[str]:
    """The outcomes that pass: a clean run ends; a victim that was killed dies; every
    other process (the skipping or disagreeing victim too) raises in bound."""
    if run["fault"] == "none":
        return {"ended"}
    if pid == run["victim"] and run["fault"] == "kill":  # its own SIGKILL, unless the
        return {"abort", "raised"}  # others timed out and told it first
    return {"raised"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    table = collections.Counter()
    failures = []
    for i in range(args.runs):
        run = draw(rng)
        for pid, (outcome, detail) in sorted(execute(run).items()):
            table[run["fault"], outcome] += 1
            if outcome not in expected(run, pid):
                failures.append((run, pid, outcome, detail))
            elif outcome == "raised":
                table[run["fault"], "worst s"] = max(table[run["fault"], "worst s"],
                                                     float(detail.split()[0]))
        print(f"  run {i + 1}/{args.runs}: {run}", file=sys.stderr)
    print(f"{'fault':<8} {'raised':>7} {'ended':>6} {'late':>5} {'abort':>6} {'hang':>5} "
          f"{'other':>6} {'worst s':>8}")
    for fault in FAULTS:
        row = [table[fault, key] for key in ("raised", "ended", "late", "abort", "hang",
                                             "other")]
        print(f"{fault:<8} " + " ".join(f"{n:>{w}}" for n, w in zip(row, (7, 6, 5, 6, 5, 6)))
              + f" {table[fault, 'worst s']:>8.2f}")
    for run, pid, outcome, detail in failures:
        print(f"FAILED {run} process {pid}: {outcome} {detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
