"""vtmultipasssink stopped during pass 2 (was tests/multipass-sink.sh 6 and 10):
- kill -9 during pass 2, then a new run: no partial output at location, the stale temporary files
  are removed by the new run (each logged), which writes its file;
- gst-launch-1.0 -e and SIGINT during pass 2: gst-launch sends EOS, the sink writes the last
  complete result (pass 1's frames, and any range pass 2 finished) with one WARNING naming the cut
  pass, and exits 0: a complete file of all 300 frames.
"""
import re
import signal
import subprocess
import time

import pytest

from multipass_sink_testing import launch, source


def start_until_pass_2(env, log_path, *arguments):
    """gst-launch-1.0 `arguments` in the background, returned once it printed its pass-2 progress
    message (up to 120 s): (process, True) or (process, False) when pass 2 never started."""
    log = open(log_path, "w")
    process = subprocess.Popen(["gst-launch-1.0", *map(str, arguments)], env=env, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(1200):
        if "Progress: (pass-2)" in log_path.read_text():
            return process, True
        if process.poll() is not None:
            break
        time.sleep(0.1)
    return process, False


@pytest.fixture(scope="module")
def crashed(sink_env, clip, tmp_path_factory):
    """The run killed (-9) in pass 2: (pass 2 started, output, the stale files it left)."""
    work = tmp_path_factory.mktemp("crash")
    crash = work / "crash"
    crash.mkdir()
    output = crash / "out.mp4"
    process, started = start_until_pass_2(sink_env, work / "crash.log", *source(clip), "!", "vtmultipasssink",
                                          f"location={output}", "bitrate=1000")
    process.kill()
    process.wait()
    return started, output, sorted(p.name for p in crash.iterdir() if p.name.startswith(".swiftvt-"))


@pytest.fixture(scope="module")
def after_crash(sink_env, short_clip, crashed):
    """The next run to the same location (INFO log of vtmultipasssink)."""
    return launch(dict(sink_env, GST_DEBUG="vtmultipasssink:4"), *source(short_clip), "!", "vtmultipasssink",
                  f"location={crashed[1]}", "bitrate=1000", "max-passes=1", messages=False, check=False)


def test_kill_in_pass_2_happens_in_pass_2(crashed):
    assert crashed[0], "pass 2 never started"


def test_kill_in_pass_2_leaves_no_partial_file(crashed):
    assert not crashed[1].exists()


def test_kill_in_pass_2_leaves_temporary_files(crashed):
    """(Else the test would prove nothing.)"""
    assert crashed[2], "the killed run left no temporary files to clean up"


def test_run_after_crash_succeeds(after_crash):
    assert after_crash[0] == 0, after_crash[1][-2000:]


def test_run_after_crash_removes_every_stale_file(crashed, after_crash):
    """Each removal is logged (INFO): as many as the killed run left."""
    removed = re.findall(r"removed .*left by a run that did not finish", after_crash[1])
    assert crashed[2] and len(removed) == len(crashed[2]), f"removed {len(removed)} of {len(crashed[2])}"


def test_run_after_crash_leaves_no_stale_file(crashed, after_crash):
    assert [p.name for p in crashed[1].parent.iterdir() if p.name.startswith(".swiftvt-")] == []


def test_run_after_crash_writes_its_file(crashed, after_crash):
    assert crashed[1].exists() and crashed[1].stat().st_size > 0


@pytest.fixture(scope="module")
def interrupted(sink_env, clip, tmp_path_factory):
    """(pass 2 started, ended within 60 s of SIGINT, exit status, log, output)."""
    work = tmp_path_factory.mktemp("interrupted")
    output = work / "interrupted.mp4"
    log = work / "interrupted.log"
    process, started = start_until_pass_2(sink_env, log, "-e", *source(clip), "!", "vtmultipasssink",
                                          f"location={output}", "bitrate=1000")
    if started:
        time.sleep(1)
    process.send_signal(signal.SIGINT)
    try:
        status, ended = process.wait(60), True
    except subprocess.TimeoutExpired:
        process.kill()
        status, ended = process.wait(), False
    return started, ended, status, log.read_text(), output


def test_sigint_in_pass_2_happens_in_pass_2(interrupted):
    assert interrupted[0], "pass 2 never started"


def test_sigint_in_pass_2_ends_within_60_s(interrupted):
    assert interrupted[1], "gst-launch-1.0 -e did not end within 60 s of SIGINT"


def test_sigint_in_pass_2_exits_0(interrupted):
    assert interrupted[2] == 0, interrupted[3][-2000:]


def test_sigint_in_pass_2_one_warning(interrupted):
    assert len([line for line in interrupted[3].splitlines()
                if line.startswith("WARNING")]) == 1, interrupted[3][-2000:]


def test_sigint_in_pass_2_warning_names_the_cut_pass(interrupted):
    assert re.search(r"WARNING.*pass 2 was cut short: the stream ended after \d* of the \d* frames", interrupted[3])


def test_sigint_in_pass_2_no_error(interrupted):
    assert not re.search(r"^ERROR", interrupted[3], re.M)


def test_sigint_in_pass_2_file_has_every_frame(sink_env, interrupted):
    from swiftvt_testing import run
    assert run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries",
                "stream=codec_name,nb_read_frames", "-of", "csv=p=0", interrupted[4]], sink_env).strip() == "h264,300"
