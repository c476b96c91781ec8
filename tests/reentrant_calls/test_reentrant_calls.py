"""Calls back into SwiftVT's elements from the places where an element calls out (was
tests/reentrant-calls.sh): a downstream caps query and a bus sync handler (tests/lib/reentrant_calls.py,
one process per case). No element may hold one of its locks while it calls out (Swift's `Mutex` is
not recursive: a call back on the same thread would deadlock or trap), so each pipeline must reach
EOS with every frame, and the call back must have happened (else the case tested nothing). A
deadlock is caught by the process's timeout and reported as one."""
import json
import subprocess

import pytest

from swiftvt_testing import ROOT, SYSTEM_PYTHON

CASES = ["h264parse-to-avcc-from-a-query", "vtdec-from-a-query", "vtenc-from-a-query", "h265parse-to-hvcc-from-a-query",
         "vtdec-from-a-bus-sync-handler"]
TIMEOUT = 90   # the case waits 60 s for EOS; a deadlocked process never gets there


@pytest.fixture(scope="module")
def outcomes(plugin_env):
    done = {}

    def get(case):
        if case not in done:
            try:
                result = subprocess.run([SYSTEM_PYTHON, str(ROOT / "tests" / "lib" / "reentrant_calls.py"),
                                         str(CASES.index(case))], env=plugin_env, capture_output=True, text=True,
                                        timeout=TIMEOUT)
                lines = result.stdout.strip().splitlines()
                done[case] = json.loads(lines[-1]) if result.returncode == 0 and lines else \
                    {"ended": "crash", "error": f"exit {result.returncode}: {result.stderr[-2000:]}"}
            except subprocess.TimeoutExpired:
                done[case] = {"ended": "hung"}
        return done[case]
    return get


@pytest.mark.parametrize("case", CASES)
def test_call_back_does_not_deadlock(outcomes, case):
    outcome = outcomes(case)
    assert outcome["ended"] != "hung", \
        f"the pipeline hung for {TIMEOUT} s: an element holds a lock while calling out (deadlock)"
    assert outcome["ended"] != "timeout", "no EOS within 60 s (a deadlock?)"
    assert outcome["ended"] != "crash", outcome["error"]


@pytest.mark.parametrize("case", CASES)
def test_call_back_ends_without_an_error(outcomes, case):
    outcome = outcomes(case)
    assert outcome["ended"] == "eos", outcome


@pytest.mark.parametrize("case", CASES)
def test_call_back_happened(outcomes, case):
    assert outcomes(case).get("reentries"), "the call back never happened (the test did not test anything)"


@pytest.mark.parametrize("case", CASES)
def test_call_back_every_frame_reaches_the_sink(outcomes, case):
    outcome = outcomes(case)
    assert outcome.get("frames") == outcome.get("expected_frames", -1), outcome
