"""Issue 32 row 12: vtmultipasssink's GstMessageProgress messages carry the pass's percentage in
their `percent` field (gst_message_new_progress sets 0 for START and CONTINUE): every pass starts
at 0, rises while it runs and completes at 100 (multipass_progress.py reads the bus). Before the
fix every CONTINUE message said 0."""
import json

import pytest

from swiftvt_testing import ROOT, SYSTEM_PYTHON, run

HELPER = ROOT / "tests" / "lib" / "multipass_progress.py"
MIN_PASSES = 2


@pytest.fixture(scope="module")
def progress(misc_env, clip_source, tmp_path_factory):
    output = tmp_path_factory.mktemp("r12") / "r12.mp4"
    report = json.loads(run([SYSTEM_PYTHON, HELPER,
                             f"{clip_source} ! vtmultipasssink location={output} bitrate=150 max-keyframe-interval=30"],
                            misc_env, timeout=400))
    passes = {}
    for message in report["messages"]:
        passes.setdefault(message["code"], []).append(message)
    return report, passes


def test_progress_run_ends_by_eos(progress):
    report, _ = progress
    assert report["ended"] == "eos", report["error"] or report["ended"]


def test_progress_every_message_has_a_percent_field(progress):
    report, _ = progress
    assert report["messages"], "no progress message"
    missing = [m["structure"] for m in report["messages"] if m["percent"] is None]
    assert not missing, f"no int field 'percent' in {missing}"


def test_progress_reports_every_pass(progress):
    _, passes = progress
    assert len(passes) >= MIN_PASSES, f"{len(passes)} pass(es) reported: {sorted(passes)}"


def percents(messages, kind=None):
    return [m["percent"] for m in messages if kind is None or m["kind"] == kind]


def test_progress_each_pass_starts_at_0(progress):
    _, passes = progress
    for code, messages in passes.items():
        assert (messages[0]["kind"], messages[0]["percent"]) == ("start", 0), f"{code}: {percents(messages)}"


def test_progress_each_pass_completes_at_100(progress):
    _, passes = progress
    for code, messages in passes.items():
        assert (messages[-1]["kind"], messages[-1]["percent"]) == ("complete", 100), f"{code}: {percents(messages)}"


def test_progress_never_falls(progress):
    _, passes = progress
    for code, messages in passes.items():
        values = percents(messages)
        assert all(later >= earlier for earlier, later in zip(values, values[1:])), f"{code}: {values}"


def test_progress_continue_messages_lie_between_0_and_100(progress):
    _, passes = progress
    for code, messages in passes.items():
        running = percents(messages, "continue")
        assert any(0 < percent < 100 for percent in running), f"{code}: {running}"


def test_progress_continue_messages_rise(progress):
    _, passes = progress
    for code, messages in passes.items():
        running = percents(messages, "continue")
        assert len(set(running)) >= min(3, len(running)), f"{code}: {running}"
