"""vtmultipasssink with sources that cannot give it a second pass, or start late (was
tests/multipass-sink.sh 3, 9 and 12):
- a non-seekable source (a pipe): single-pass output of every frame, with a warning;
- a source that does not replay its frames after the seek back (videotestsrc num-buffers counts
  across seeks): pass 2 gets no frame, so the file is pass 1's result (the .h264 byte-identical to
  a max-passes=1 run), with one WARNING naming pass 2 and the frames missing;
- sources whose time stamps do not start at 0 (MPEG-TS at 1.47 s, Matroska at 10 s): the seek for
  pass 2 goes to the stream time of the range, so more than one pass runs, no WARNING, every frame
  in the file (before the fix the Matroska clip gave "pass 2 was cut short ... after 0 of the 150
  frames": the seek went to the time stamp, not the stream time).
"""
import subprocess

import pytest

from multipass_sink_testing import SOURCE_CAPS, done_field, launch, read_frames, warnings
from swiftvt_testing import PipelineRunner


@pytest.fixture(scope="module")
def piped(sink_env, short_clip, tmp_path_factory):
    output = tmp_path_factory.mktemp("pipe") / "pipe.mp4"
    with subprocess.Popen(["cat", str(short_clip)], stdout=subprocess.PIPE) as cat:
        status, log = launch(sink_env, "fdsrc", "fd=0", "!", *SOURCE_CAPS, "!", "vtmultipasssink",
                             f"location={output}", "bitrate=1000", stdin=cat.stdout, check=False)
    return status, log, output


def test_non_seekable_source_succeeds(piped):
    assert piped[0] == 0, piped[1][-3000:]


def test_non_seekable_source_warns(piped):
    assert any("upstream cannot seek" in line for line in warnings(piped[1])), piped[1][-2000:]


def test_non_seekable_source_single_pass(piped):
    assert done_field(piped[1], "passes") == "1", piped[1][-2000:]


def test_non_seekable_source_writes_every_frame(sink_env, piped):
    from swiftvt_testing import run
    assert run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=nb_frames", "-of", "csv=p=0",
                piped[2]], sink_env).strip() == "60"


TEST_SOURCE = ["videotestsrc", "num-buffers=60", "!", "video/x-raw,width=320,height=240,framerate=30/1"]


@pytest.fixture(scope="module")
def no_replay(sink_env, tmp_path_factory):
    work = tmp_path_factory.mktemp("no-replay")
    output = work / "no-replay.h264"
    return PipelineRunner(sink_env, work)(*TEST_SOURCE, "!", "vtmultipasssink", f"location={output}", "bitrate=300",
                                          timeout=120, expect="eos"), output


def test_source_not_replaying_ends_by_eos(no_replay):
    assert no_replay[0].status == 0, no_replay[0].log[-2000:]


def test_source_not_replaying_one_warning(no_replay):
    assert len(no_replay[0].warnings) == 1, no_replay[0].warnings


def test_source_not_replaying_warning_names_pass_2(no_replay):
    assert any("pass 2 was cut short: the stream ended after 0 of the 60 frames" in w["message"]
               for w in no_replay[0].warnings), no_replay[0].warnings


def test_source_not_replaying_file_is_pass_1s(sink_env, no_replay, tmp_path):
    one_pass = tmp_path / "one-pass.h264"
    launch(sink_env, *TEST_SOURCE, "!", "vtmultipasssink", f"location={one_pass}", "bitrate=300", "max-passes=1",
           timeout=120, messages=False, extra=["-q"])
    assert no_replay[1].read_bytes() == one_pass.read_bytes(), \
        "the file is not pass 1's result (differs from max-passes=1)"


@pytest.fixture(scope="module", params=["mpegts", "matroska"])
def offset(request, sink_env, media):
    container = request.param
    clip = media.directory / f"offset.{container}"
    media.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "150",
                 "-c:v", "libx264", "-g", "30",
                 *(["-output_ts_offset", "10"] if container == "matroska" else []), "-f", container, clip)
    output = media.directory / f"offset-{container}.mp4"
    demuxer = {"mpegts": "tsdemux", "matroska": "matroskademux"}[container]
    status, log = launch(sink_env, "filesrc", f"location={clip}", "!", demuxer, "!", "h264parse",
                         "!", "avdec_h264", "!",
                         "videoconvert", "!", "vtmultipasssink", f"location={output}", "bitrate=300", timeout=120,
                         check=False)
    return status, log, output


def test_late_start_succeeds(offset):
    assert offset[0] == 0, offset[1][-2000:]


def test_late_start_runs_more_than_one_pass(offset):
    assert int(done_field(offset[1], "passes") or 0) >= 2, offset[1][-2000:]


def test_late_start_writes_every_frame(sink_env, offset):
    assert read_frames(sink_env, offset[2]) == "150"


def test_late_start_no_warning(offset):
    assert warnings(offset[1]) == []
