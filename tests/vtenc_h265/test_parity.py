"""vtenc_h265 against x265enc on the H.264 parity rows (issue 37 item 4, as issue 16's rows 1-5 for
vtenc against x264enc), each in the same pipeline for both:
- downstream's profile and level (row 1): a Main stream is labelled main-10 for a downstream that
  takes only main-10 (A.3: x265 sets general_profile_compatibility_flag[2], so it is a Main 10
  stream), a higher level is labelled when downstream asks one; the Main-tier refusals (a profile
  the input cannot make, a level below what the stream needs) are one ERROR at the caps that says
  what to convert or change (x265enc writes its Main stream under main-444 caps, or fails later);
- frames without time stamps from appsrc (row 2) are encoded;
- an odd size in 4:2:0 (row 4's neighbour) is one ERROR at the caps saying what to do, where
  x265enc says "Can not initialize x265 encoder.";
- a mid-stream caps change (a new size through concat) gives a stream whose pictures take the new
  size from that point, every frame decoded.
"""
import json
import re
from pathlib import Path

import pytest

from parity_testing import assert_one_swiftvt_error, decoded_frames, error_kind, stream_fields
from swiftvt_testing import SYSTEM_PYTHON, run
from vtenc_h265_testing import caps_fields

SRC = "videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=640,height=480,framerate=30/1"
UNTIMED = Path(__file__).parent.parent / "parity" / "parity_untimed.py"


@pytest.mark.parametrize("caps, profile, level", [
    ("profile=main-10", "main-10", "3"),
    ("level=(string)5.1", "main", "5.1"),
    ("profile=main,level=(string)3", "main", "3"),
], ids=["main-10", "level-5.1", "main-level-3"])
def test_row1_labelled_as_downstream_takes(runner, h265_env, work, caps, profile, level):
    output = work / f"r1-{profile}-{level}.mp4"
    runner(f"{SRC} ! vtenc_h265 ! video/x-h265,{caps} ! mp4mux ! filesink location={output}", timeout=120,
           expect="eos")
    negotiated = caps_fields(h265_env, f"{SRC} ! vtenc_h265 ! video/x-h265,{caps}")
    assert (negotiated["profile"], negotiated["level"]) == (profile, level), negotiated
    # The stream itself stays what x265 wrote: Main at level 3 for 640x480 at 30/1.
    assert stream_fields(h265_env, output, "profile,level,nb_read_frames") == "Main,90,10"


@pytest.mark.parametrize("caps, text", [
    ("profile=main-444", r"downstream takes profile main-444, and x265 codes I420 as main.*Y444 for main-444"),
    ("level=(string)2", r"the stream needs level 3 or higher.*downstream takes level 2"),
], ids=["profile-main-444", "level-2"])
def test_row1_refused_is_one_error_at_the_caps(runner, caps, text):
    result = runner.error(f"{SRC} ! vtenc_h265 name=enc ! video/x-h265,{caps} ! fakesink")
    error = assert_one_swiftvt_error(result, r"^enc: cannot encode 640x480 I420 for downstream: " + text)
    assert error_kind(error) == ("enc", "stream/format")


@pytest.mark.parametrize("encoder", ["vtenc_h265", "x265enc"])
def test_row2_frames_without_time_stamps_are_encoded(h265_env, work, encoder):
    output = work / f"untimed-{encoder}.h265"
    report = json.loads(run([SYSTEM_PYTHON, UNTIMED, encoder, output, 30, 60], h265_env, timeout=120))
    assert (report["frames_out"], report["errors"]) == (30, []), report
    assert decoded_frames(h265_env, output) == 30


def test_odd_height_is_one_error_at_the_caps(runner):
    result = runner.error("videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=66,height=65 ! "
                          "vtenc_h265 name=enc ! fakesink")
    error = assert_one_swiftvt_error(result, r"^enc: cannot encode 66x65 I420: height 65 is odd.*crop or pad")
    assert error_kind(error) == ("enc", "stream/format")


@pytest.mark.parametrize("encoder", ["vtenc_h265", "x265enc"])
def test_mid_stream_size_change_decodes_every_frame_at_both_sizes(runner, h265_env, work, encoder):
    output = work / f"resized-{encoder}.h265"
    runner(f"concat name=c ! {encoder} ! video/x-h265,stream-format=byte-stream ! filesink location={output} "
           "videotestsrc num-buffers=30 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! c. "
           "videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=I420,width=640,height=480,framerate=30/1 "
           "! c.", timeout=120, expect="eos")
    widths = run(["ffprobe", "-v", "error", "-show_entries", "frame=width", "-of", "csv=p=0", output],
                 h265_env).split()
    widths = [re.sub(r"\D", "", w) for w in widths]
    assert widths == ["320"] * 30 + ["640"] * 30, widths
