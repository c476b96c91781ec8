"""vtenc against x264enc on ordinary input (issue 16 rows 1-5): a profile and level from
downstream's caps (constrained baseline labelled baseline, the level honoured, every frame in the
file; a level the picture cannot fit and level=4.1 typed as a number: one ERROR at the caps);
frames without time stamps from appsrc; the SPS VUI declares the caps' rate; interlaced input coded
interlaced in the caps' field order (one ERROR with downstream asking baseline); rate-control=quality
quality=1 (and 0.99) lossless in High 4:4:4 Predictive (one ERROR if downstream refuses it)."""
import json
import re
import subprocess
from pathlib import Path

import pytest

from parity_testing import SRC, assert_one_swiftvt_error, decoded_frames, error_kind, md5_of, negotiated_caps, \
    stream_fields
from swiftvt_testing import SYSTEM_PYTHON, run

UNTIMED = Path(__file__).with_name("parity_untimed.py")


@pytest.mark.parametrize("caps, want", [
    ("profile=baseline", r"Constrained Baseline,[0-9]*,30"),
    ("profile=baseline,level=(string)4.1", r"Constrained Baseline,41,30"),
    ("level=(string)3", r"[A-Za-z ]*,30,30"),
], ids=["baseline", "baseline-level-4.1", "level-3"])
def test_row1_profile_and_level_from_downstream(runner, parity_env, work, caps, want):
    output = work / f"r1-{caps.replace('=', '-').replace(',', '-').replace('(string)', '')}.mp4"
    runner(f"{SRC} ! vtenc ! video/x-h264,{caps} ! mp4mux ! filesink location={output}", timeout=120, expect="eos")
    got = stream_fields(parity_env, output, "profile,level,nb_read_frames")
    assert re.fullmatch(want, got), f"ffprobe says {got!r}, wanted {want}"


@pytest.mark.parametrize("caps, text", [
    ("level=(string)1", "needs level 1.3 or higher"),
    ("level=4.1", "write level=(string)4.1"),
], ids=["level-too-low", "level-as-number"])
def test_row1_level_refused_is_one_error(runner, caps, text):
    result = runner.error(f"{SRC} ! vtenc name=enc ! video/x-h264,{caps} ! mp4mux ! fakesink")
    assert error_kind(assert_one_swiftvt_error(result, re.escape(text))) == ("enc", "stream/format")


@pytest.mark.parametrize("encoder", ["vtenc", "x264enc"])
def test_row2_frames_without_time_stamps_are_encoded(parity_env, work, encoder):
    output = work / f"untimed-{encoder}.h264"
    report = json.loads(run([SYSTEM_PYTHON, UNTIMED, encoder, output, 30, 60], parity_env, timeout=120))
    assert (report["frames_out"], report["errors"]) == (30, []), report
    frames = decoded_frames(parity_env, output)
    assert frames == 30, f"ffprobe decodes {frames} frames"


@pytest.mark.parametrize("encoder", ["vtenc", "x264enc"])
def test_row3_vui_declares_the_caps_rate(parity_env, work, encoder):
    output = work / f"r3-{encoder}.h264"
    run(["gst-launch-1.0", "-q", *SRC.split(), "!", encoder, "!", "video/x-h264,stream-format=byte-stream", "!",
         "filesink", f"location={output}"], parity_env, check=False)
    rate = stream_fields(parity_env, output, "r_frame_rate")
    parsed = negotiated_caps(parity_env, f"filesrc location={output} ! h264parse")["fields"].get("framerate")
    assert (rate, parsed) == ("30/1", ["GstFraction", "30/1"]), f"ffprobe {rate}, h264parse {parsed}"


@pytest.mark.parametrize("order, want", [("", "bb"), (",field-order=top-field-first", "tt"),
                                         (",field-order=bottom-field-first", "bb")],
                         ids=["default", "top-field-first", "bottom-field-first"])
def test_row4_interlaced_input_is_coded_in_its_field_order(parity_env, work, order, want):
    got = {}
    for encoder in ("vtenc", "x264enc"):
        output = work / f"r4-{encoder}-{want}{len(order)}.h264"
        run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=10", "!",
             f"video/x-raw,format=I420,width=320,height=240,framerate=30/1,interlace-mode=interleaved{order}", "!",
             encoder, "!", "video/x-h264,stream-format=byte-stream", "!", "filesink", f"location={output}"],
            parity_env, check=False)
        got[encoder] = stream_fields(parity_env, output, "field_order")
    assert got == {"vtenc": want, "x264enc": want}


def test_row4_interlaced_with_downstream_baseline_is_one_error(runner):
    result = runner.error("videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1,"
                          "interlace-mode=interleaved ! vtenc name=enc ! video/x-h264,profile=baseline ! fakesink")
    error = assert_one_swiftvt_error(result, "interlaced coding is not allowed in the constrained-baseline profile")
    assert error_kind(error) == ("enc", "library/settings")


@pytest.fixture(scope="module")
def source_md5(parity_env, work):
    raw = work / "source.yuv"
    run(["gst-launch-1.0", "-q", *SRC.split(), "!", "filesink", f"location={raw}"], parity_env)
    return md5_of(raw)


@pytest.mark.parametrize("quality", ["1", "0.99"])
def test_row5_quality_1_is_lossless(runner, parity_env, work, source_md5, quality):
    output = work / f"r5-{quality}.h264"
    runner(f"{SRC} ! vtenc rate-control=quality quality={quality} ! video/x-h264,stream-format=byte-stream "
           f"! filesink location={output}", timeout=120, expect="eos")
    profile = stream_fields(parity_env, output, "profile")
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-i", str(output), "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"],
                             env=parity_env, capture_output=True, timeout=120).stdout
    import hashlib
    assert profile == "High 4:4:4 Predictive"
    assert hashlib.md5(decoded).hexdigest() == source_md5, "the decoded frames differ from the source"


def test_row5_lossless_with_downstream_high_only_is_one_error(runner):
    result = runner.error(f"{SRC} ! vtenc name=enc rate-control=quality quality=1 ! "
                          "video/x-h264,profile=high ! fakesink")
    assert error_kind(assert_one_swiftvt_error(result, "needs the high-4:4:4 profile")) == ("enc", "stream/format")
