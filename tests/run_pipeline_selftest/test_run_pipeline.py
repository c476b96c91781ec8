"""tests/lib/run-pipeline.py, the pipeline runner the tests use where a pipeline is expected to fail
(gst-launch-1.0 1.22 can hang when an ERROR comes before its main loop runs), was
tests/run-pipeline-selftest.sh: each exit status and the gst-launch-style lines tests and people
read (one test per case and line), with core GStreamer elements only and a private registry (the
runner must not depend on, or rewrite, the user's). Each case runs once (module fixture)."""
import os
import re
import signal
import subprocess
import time

import pytest

from swiftvt_testing import SYSTEM_PYTHON, PipelineRunner

NOT_NEGOTIATED = ["videotestsrc", "num-buffers=3", "!", "video/x-raw,format=I420,width=64,height=64", "!",
                  "rawvideoparse", "use-sink-caps=false", "format=i420", "width=64", "height=64", "!",
                  "video/x-raw,format=NV12", "!", "fakesink"]

# name: (exit status, [patterns a line of the output must match (re.search per line)], runner arguments)
CASES = {
    "parse-error": (2, [r'^ERROR: pipeline could not be constructed: no element "no_such_element"'],
                    ["videotestsrc ! no_such_element"]),
    # gst-launch-1.0 refuses this one at parse time too: two capsfilters that cannot link.
    "caps-link-error": (2, [r"^ERROR: pipeline could not be constructed"],
                        ["videotestsrc num-buffers=3 ! video/x-raw,format=I420 ! video/x-raw,format=NV12 ! fakesink"]),
    "eos": (0, [r'^Got EOS from element "pipeline0"\.$', r"^run-pipeline: 0 error\(s\), 0 warning\(s\), ended by eos$"],
            ["videotestsrc", "num-buffers=3", "!", "fakesink"]),
    "eos-after-double-dash": (0, [r'^Got EOS from element "pipeline0"\.$'],
                              ["--timeout", "30", "--", "videotestsrc", "num-buffers=3", "!", "fakesink"]),
    # A failure at negotiation, while streaming: rawvideoparse announces NV12-incompatible I420 caps
    # only once data flows (the link check at parse time cannot see it).
    "not-negotiated": (1, [r"^ERROR: from element /GstPipeline:pipeline0/GstVideoTestSrc:videotestsrc0: "
                           r"Internal data stream error\.$",
                           r"^Additional debug info:$", r"reason not-negotiated",
                           r"^run-pipeline: 1 error\(s\), 0 warning\(s\), ended by error$"], NOT_NEGOTIATED),
    "expect-error-gets-error": (0, [r"^ERROR: from element"], ["--expect", "error", *NOT_NEGOTIATED]),
    "expect-error-gets-eos": (1, [r"^run-pipeline: expected an ERROR, but the pipeline ended by eos$"],
                              ["--expect", "error", "videotestsrc", "num-buffers=3", "!", "fakesink"]),
    "expect-eos-gets-error": (1, [r"^run-pipeline: expected EOS, but the pipeline ended by error$"],
                              ["--expect", "eos", *NOT_NEGOTIATED]),
    # An ERROR posted during the first state change (before gst-launch-1.0's main loop would run):
    # reported, and every copy counted (filesrc and its base class each post one).
    "state-change-failure": (1, [r"^ERROR: from element /GstPipeline:pipeline0/GstFileSrc:filesrc0: "
                                 r"Resource not found\.$",
                                 r"^run-pipeline: 2 error\(s\), 0 warning\(s\), ended by state-change-failure$"],
                             ["filesrc", "location=/nonexistent-dir/input", "!", "fakesink"]),
    "state-change-failure-expected": (0, [r"^ERROR: from element"],
                                      ["--expect", "error", "filesrc", "location=/nonexistent-dir/input", "!",
                                       "fakesink"]),
    # --force-key-units needs the element that sends the events (vtenc_va's forced key frames use it).
    "force-key-units-without-forcer": (2, [r"^ERROR: --force-key-units needs an element named forcer"],
                                       ["--force-key-units", "2,5", "videotestsrc", "num-buffers=8", "!", "fakesink"]),
    "force-key-units-bad-frames": (2, [r"--force-key-units 2;5: frame numbers separated by commas"],
                                   ["--force-key-units", "2;5", "videotestsrc", "num-buffers=8", "!", "fakesink"]),
    "force-key-units": (0, [r'^Got EOS from element "pipeline0"\.$'],
                        ["--force-key-units", "2,5", "videotestsrc", "num-buffers=8", "!", "identity", "name=forcer",
                         "!", "fakesink"]),
    # Arguments are joined as gst-launch-1.0 joins them: a value with a space stays one value.
    "spaces-in-argument": (0, [r"^Got EOS"], ["videotestsrc", "num-buffers=2", "!", "filesink",
                                              "location={work}/a folder/out.raw"]),
    # A pipeline that never ends: exit 124 at the timeout, not later.
    "timeout": (124, [r"^run-pipeline: timed out after 2 s \(state PLAYING",
                      r"^run-pipeline: 0 error\(s\), 0 warning\(s\), ended by timeout$"],
                ["--timeout", "2", "videotestsrc", "is-live=true", "!", "fakesink"]),
    # A teardown that cannot finish: identity sleeps 30 s in the streaming thread (g_usleep, which no
    # flush interrupts), so setting NULL blocks; after the timeout the runner gives up on it at 10 s.
    "teardown-hung": (3, [r"^run-pipeline: timed out after 2 s", r"^run-pipeline: teardown hung"],
                      ["--timeout", "2", "videotestsrc", "!", "identity", "sleep-time=30000000", "!", "fakesink"]),
}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    path = tmp_path_factory.mktemp("run-pipeline")
    (path / "a folder").mkdir()
    return path


@pytest.fixture(scope="module")
def env(work):
    return dict(os.environ, GST_REGISTRY=str(work / "registry.bin"))


@pytest.fixture(scope="module")
def ran(env, work):
    """name -> (exit status, output lines, seconds)."""
    done = {}

    def get(name):
        if name not in done:
            arguments = [a.format(work=work) for a in CASES[name][2]]
            start = time.monotonic()
            result = subprocess.run([SYSTEM_PYTHON, str(PipelineRunner.SCRIPT), *arguments], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            done[name] = (result.returncode, result.stdout.splitlines(), time.monotonic() - start)
        return done[name]
    return get


@pytest.mark.parametrize("name", CASES)
def test_exit_status(ran, name):
    status, lines, _ = ran(name)
    assert status == CASES[name][0], "\n".join(lines[-20:])


@pytest.mark.parametrize("name, pattern", [(name, pattern) for name, case in CASES.items() for pattern in case[1]],
                         ids=[f"{name}-{i}" for name, case in CASES.items() for i in range(len(case[1]))])
def test_output_line(ran, name, pattern):
    _, lines, _ = ran(name)
    assert any(re.search(pattern, line) for line in lines), f"no line matching {pattern!r}:\n" + "\n".join(lines[-20:])


def test_spaces_in_argument_writes_the_file(ran, work):
    ran("spaces-in-argument")
    output = work / "a folder" / "out.raw"
    assert output.exists() and output.stat().st_size > 0, "nothing written to a path with a space"


def test_timeout_ends_at_the_timeout(ran):
    assert ran("timeout")[2] <= 3.5


def test_hung_teardown_is_abandoned(ran):
    assert ran("teardown-hung")[2] <= 14


def test_sigterm_stops_the_pipeline(env):
    """SIGTERM (what meson sends at its own timeout), once streaming (the signal would also be
    handled before the first state change): the pipeline is stopped, exit 130."""
    process = subprocess.Popen([SYSTEM_PYTHON, str(PipelineRunner.SCRIPT), "videotestsrc", "is-live=true", "!",
                                "fakesink"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1)
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=30)
    assert process.returncode == 130, output
    assert "ended by signal" in output, output
