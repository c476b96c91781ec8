"""vtmultipasssink's checks before encoding and its output (issue 16 rows 12-15): a directory as
location: one ERROR at the state change, before any frame; 8x8 input: vtenc and vtmultipasssink
(.h264) encode it, as x264enc does, and into .mp4 (mp4mux takes 16x16 and larger) one ERROR at the
caps and no file; targets out of the encoder's reach: the file written as close as it gets, one
WARNING with the reachable figure, no third pass that cannot come closer; the same run twice: the
same bytes (.h264), the same H.264 samples (.mp4)."""
import hashlib
import json
import re
import subprocess

import pytest

from parity_testing import SRC, assert_one_swiftvt_error, error_kind, md5_of, stream_fields
from swiftvt_testing import ROOT, SYSTEM_PYTHON, run

SMALL_SOURCE = "videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=8,height=8,framerate=30/1"
PROGRESS = ROOT / "tests" / "lib" / "multipass_progress.py"


def test_row13_location_a_directory_is_one_error(runner, work):
    (work / "dir.mp4").mkdir()
    result = runner.error(f"{SRC} ! vtmultipasssink name=sink location={work / 'dir.mp4'}")
    assert error_kind(assert_one_swiftvt_error(result, "is a directory, not a file")) == ("sink", "resource/open-write")


@pytest.mark.parametrize("element", ["vtmultipasssink location={out}",
                                     "vtenc ! video/x-h264,stream-format=byte-stream ! filesink location={out}"],
                         ids=["vtmultipasssink", "vtenc"])
def test_row14_8x8_is_encoded(runner, parity_env, work, element):
    output = work / f"small-{element.split()[0]}.h264"
    runner(f"{SMALL_SOURCE} ! {element.format(out=output)}", timeout=120, expect="eos")
    assert stream_fields(parity_env, output, "width,height,nb_read_frames") == "8,8,5"


@pytest.fixture(scope="module")
def small_into_mp4(runner, work):
    output = work / "small.mp4"
    return runner(f"{SMALL_SOURCE} ! vtmultipasssink name=sink location={output}", expect="error"), output


def test_row14_8x8_into_mp4_is_one_error(small_into_mp4):
    result, _ = small_into_mp4
    error = assert_one_swiftvt_error(result, "8x8 is smaller than the 16x16 that mp4mux takes")
    assert error_kind(error) == ("sink", "stream/format")


def test_row14_8x8_into_mp4_writes_no_file(small_into_mp4):
    _, output = small_into_mp4
    assert not output.exists()


@pytest.fixture(scope="module")
def clip_source(parity_env, work):
    """A replayable clip (a raw file: multi-pass seeks back)."""
    raw = work / "clip.yuv"
    run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=60", "pattern=ball", "!",
         "video/x-raw,format=I420,width=320,height=240,framerate=30/1", "!", "filesink", f"location={raw}"], parity_env)
    return f"filesrc location={raw} ! rawvideoparse width=320 height=240 format=i420 framerate=30/1"


@pytest.mark.parametrize("target", [1, 2000000])
def test_row12_target_out_of_reach(parity_env, clip_source, work, target):
    output = work / f"r12-{target}.mp4"
    report = json.loads(run([SYSTEM_PYTHON, PROGRESS, f"{clip_source} ! vtmultipasssink name=sink location={output} "
                             f"bitrate={target}"], parity_env, timeout=400))
    passes = sorted({m["code"] for m in report["messages"]})
    warnings = [w["message"] for w in report["warnings"] if w["element"] == "sink"]
    assert report["ended"] == "eos", report["error"]
    assert output.is_file() and output.stat().st_size > 0, "no file written"
    assert any(re.search(rf"bitrate={target} kbit/s is out of reach for this video: the file is [0-9.]* kbit/s", w)
               for w in warnings), warnings
    assert len(passes) != 3, f"a pass that cannot come closer: {passes}"


@pytest.fixture(scope="module", params=[0, 1], ids=["max-threads-0", "max-threads-1"])
def two_runs(request, runner, clip_source, work):
    """The same vtmultipasssink settings run twice into .h264 and .mp4."""
    outputs = {}
    for number in (1, 2):
        for extension in ("h264", "mp4"):
            output = work / f"r15-{request.param}-{number}.{extension}"
            runner(f"{clip_source} ! vtmultipasssink location={output} bitrate=300 max-threads={request.param}",
                   timeout=300, expect="eos")
            outputs[extension, number] = output
    return outputs


def test_row15_same_run_twice_same_h264_bytes(two_runs):
    first, second = two_runs["h264", 1], two_runs["h264", 2]
    assert first.is_file() and first.stat().st_size > 0
    assert md5_of(first) == md5_of(second), "the two .h264 runs differ"


def test_row15_same_run_twice_same_mp4_samples(parity_env, two_runs):
    # mp4mux writes the wall-clock time into mvhd/tkhd/mdhd (for x264enc ! mp4mux as well): the
    # H.264 samples are compared, not the files.
    samples = [hashlib.md5(subprocess.run(["ffmpeg", "-v", "error", "-i", str(two_runs["mp4", n]), "-c", "copy", "-f",
                                           "h264", "-"], env=parity_env, capture_output=True,
                                          timeout=120).stdout).hexdigest()
               for n in (1, 2)]
    assert two_runs["mp4", 1].is_file() and two_runs["mp4", 1].stat().st_size > 0
    assert samples[0] == samples[1], "the two .mp4 runs' H.264 samples differ"
