"""Issue 32 row 14, sizes below one macroblock, down to x264enc's: 2x2 and 8x8 I420, 1x1, 15x15 and
17x9 Y444 (x264enc codes odd sizes only in 4:4:4), lossless through vtenc and x264enc: each decodes
(avdec_h264 and vtdec) to the source frames, size and frame count as the source; on VA too (2x2,
8x8). Odd 4:2:0 and 4:2:2 widths (x264enc fails there with a bare not-negotiated): one ERROR at the
caps. A device whose minimum surface is larger (the driver's SWIFTVT_VA_ENCODE_MIN_SIZE=32):
hardware=require gives one ERROR naming the size and the minimum, hardware=auto encodes with x264.
Raw files are compared without the rows' padding (visible_md5)."""
import re

import pytest

from encoder_formats_testing import visible_md5
from parity_testing import assert_one_swiftvt_error, decoded_frames, error_kind, stream_fields
from swiftvt_testing import PipelineRunner

CASES = [(2, 2, "I420"), (8, 8, "I420"), (1, 1, "Y444"), (15, 15, "Y444"), (17, 9, "Y444")]


@pytest.fixture(scope="module", params=CASES, ids=lambda case: f"{case[0]}x{case[1]}-{case[2]}")
def small(request, runner, work):
    """One size: the source, vtenc's and x264enc's lossless streams, and their decodes:
    (w, h, format, name, {run: PipelineResult})."""
    w, h, fmt = request.param
    name = work / f"r14-{w}x{h}-{fmt}"
    runs = {"encode": runner("videotestsrc num-buffers=10 pattern=ball ! "
                             f"video/x-raw,format={fmt},width={w},height={h},framerate=30/1 "
                             f"! tee name=s s. ! queue ! filesink location={name}.yuv "
                             "s. ! queue ! vtenc hardware=disable rate-control=quality quality=1 ! "
                             f"video/x-h264,stream-format=byte-stream ! filesink location={name}.h264 "
                             f"s. ! queue ! x264enc pass=quant quantizer=0 ! video/x-h264,stream-format=byte-stream "
                             f"! filesink location={name}.x264enc.h264", timeout=180, expect="eos")}
    if runs["encode"].status == 0:
        for label, description in [
            ("avdec_h264", f"filesrc location={name}.h264 ! h264parse ! avdec_h264 ! filesink "
             f"location={name}.h264.avdec.yuv"),
            ("vtdec", f"filesrc location={name}.h264 ! h264parse ! vtdec hardware=disable ! filesink "
             f"location={name}.h264.vtdec.yuv"),
            ("x264enc-avdec_h264", f"filesrc location={name}.x264enc.h264 ! h264parse ! avdec_h264 ! filesink "
             f"location={name}.x264enc.yuv"),
        ]:
            runs[label] = runner(description, timeout=180, expect="eos")
    return w, h, fmt, name, runs


@pytest.mark.parametrize("run", ["encode", "avdec_h264", "vtdec", "x264enc-avdec_h264"])
def test_row14_small_size_pipeline_ends_by_eos(small, run):
    *_, runs = small
    assert run in runs, "the encoding pipeline did not end by EOS"
    assert runs[run].status == 0, runs[run].log[-2000:]


def test_row14_small_size_lossless_round_trip(small, formats_env):
    w, h, fmt, name, _ = small
    want = visible_md5(f"{name}.yuv", fmt, w, h)
    got = {"ffprobe": stream_fields(formats_env, f"{name}.h264", "width,height,nb_read_frames"),
           "avdec_h264": visible_md5(f"{name}.h264.avdec.yuv", fmt, w, h),
           "vtdec": visible_md5(f"{name}.h264.vtdec.yuv", fmt, w, h),
           "x264enc": visible_md5(f"{name}.x264enc.yuv", fmt, w, h)}
    assert got == {"ffprobe": f"{w},{h},10", "avdec_h264": want, "vtdec": want, "x264enc": want}


@pytest.fixture(scope="module", params=[(2, 2), (8, 8)], ids=["2x2", "8x8"])
def small_va(request, va_runner, work):
    w, h = request.param
    name = work / f"r14-va-{w}x{h}"
    runs = {"encode": va_runner("videotestsrc num-buffers=10 pattern=ball ! "
                                f"video/x-raw,format=I420,width={w},height={h},framerate=30/1 "
                                f"! tee name=s s. ! queue ! filesink location={name}.yuv "
                                "s. ! queue ! vtenc hardware=require ! video/x-h264,stream-format=byte-stream ! "
                                f"filesink location={name}.h264",
                                timeout=180, expect="eos")}
    if runs["encode"].status == 0:
        runs["avdec_h264"] = va_runner(f"filesrc location={name}.h264 ! h264parse ! avdec_h264 ! filesink "
                                       f"location={name}.avdec.yuv",
                                       timeout=180, expect="eos")
    return w, h, name, runs


@pytest.mark.parametrize("run", ["encode", "avdec_h264"])
def test_row14_va_small_size_pipeline_ends_by_eos(small_va, run):
    *_, runs = small_va
    assert run in runs, "the encoding pipeline did not end by EOS"
    assert runs[run].status == 0, runs[run].log[-2000:]


def test_row14_va_small_size_decodes_to_the_source(small_va):
    w, h, name, _ = small_va
    assert visible_md5(f"{name}.avdec.yuv", "I420", w, h) == visible_md5(f"{name}.yuv", "I420", w, h)


@pytest.mark.parametrize("fmt, w, h, text", [
    ("I420", 15, 15, "width 15 is odd, and 4:2:0 pictures (I420) need an even width"),
    ("Y42B", 17, 9, "width 17 is odd, and 4:2:2 pictures (Y42B) need an even width"),
], ids=["15x15-I420", "17x9-Y42B"])
def test_row14_odd_width_in_420_or_422_is_one_error(runner, fmt, w, h, text):
    result = runner.error("videotestsrc num-buffers=5 ! "
                          f"video/x-raw,format={fmt},width={w},height={h} ! vtenc name=enc hardware=disable ! fakesink")
    assert error_kind(assert_one_swiftvt_error(result, re.escape(text))) \
        == ("enc", "stream/format")


@pytest.fixture(scope="module")
def min_size_runner(va_env, work):
    return PipelineRunner(dict(va_env, SWIFTVT_VA_ENCODE_MIN_SIZE="32"), work)


def test_row14_below_the_devices_minimum_with_hardware_require_is_one_error(min_size_runner):
    result = min_size_runner.error("videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=16,height=16 "
                                   "! vtenc name=enc hardware=require ! fakesink")
    error = assert_one_swiftvt_error(result, r"16x16 \(coded as 16x16, whole macroblocks\) is smaller than the 32x32")
    assert error_kind(error) == ("enc", "resource/not-found")


def test_row14_below_the_devices_minimum_with_hardware_auto_encodes_with_x264(min_size_runner, va_env, work):
    output = work / "r14-auto.h264"
    min_size_runner.eos("videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=16,height=16 ! vtenc hardware=auto "
                        f"! video/x-h264,stream-format=byte-stream ! filesink location={output}")
    frames = decoded_frames(va_env, output)
    assert frames == 5
