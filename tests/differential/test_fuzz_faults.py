"""The fault mode's own rules, on hand-made process endings: the bound each fault is
held to, how an ending is classified, and which endings pass."""
from __future__ import annotations

import json
import random

from fuzz_faults import bound, classify, draw, expected

KILL = {"count": 3, "fault": "kill", "victim": 2, "operation": "sync", "delay": 0.5}


def raised(after: float, message: str = "plax.distributed run failed: x") -> str:
    return f"READY 6.0\nRAISED {json.dumps({'after': after, 'message': message})}\nFINALLY\n"


def test_a_dead_peer_is_due_a_heartbeat_after_its_death_or_at_the_collective_timeout():
    assert bound(KILL) == 0.5 + 2.0 + 3.0
    assert bound({**KILL, "delay": 2.5}) == 3.0 + 3.0  # the timeout fires first
    assert bound({**KILL, "fault": "skip"}) == 3.0 + 3.0
    assert bound({**KILL, "fault": "missing"}) == 4 + 3.0


def test_endings_are_classified_by_status_report_and_bound():
    assert classify(KILL, 0, 3, raised(2.4))[0] == "raised"
    assert classify(KILL, 0, 3, raised(9.0))[0] == "late"
    assert classify(KILL, 0, 3, "READY\nRAISED {")[0] == "other"  # no FINALLY, bad line
    assert classify(KILL, 0, 0, "READY 6.0\nRESULT synced\nFINALLY\n")[0] == "ended"
    assert classify(KILL, 0, -6, "F1206 client.h:80] Terminating process")[0] == "abort"
    assert classify(KILL, 0, 1, "JaxRuntimeError: Gloo AllGather failed")[0] == "other"


def test_survivors_must_raise_and_a_clean_run_must_end():
    assert expected(KILL, 0) == {"raised"}
    assert expected(KILL, 2) == {"abort", "raised"}  # killed, or told first
    assert expected({**KILL, "fault": "skip"}, 2) == {"raised"}
    assert expected({**KILL, "fault": "none"}, 1) == {"ended"}


def test_draws_make_every_process_the_victim_process_0_too():
    rng = random.Random(0)
    runs = [draw(rng) for _ in range(200)]
    assert all(0 <= run["victim"] < run["count"] for run in runs)
    assert {run["victim"] for run in runs} == {0, 1, 2}
    assert {run["fault"] for run in runs} == {"kill", "stop", "skip", "count", "missing",
                                              "none"}
