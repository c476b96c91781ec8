"""An SPS re-sent mid-GOP with only its VUI changed: references kept, one VA context. The same
slices; the SPS/PPS that h264_metadata rewrote (colour description, full range) are inserted
before picture 10, a non-IDR picture (splice_sps.py). Nothing decoding depends on changed, so the
decoder adopts the SPS without a new sequence (GStreamer's H.264 decoder does the same): the
pictures are the original's, and the VA context is not made again (NVDEC stalls on that).

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_sps_resent_mid_gop.py
"""
from pathlib import Path

import pytest

from swiftvt_testing import SYSTEM_PYTHON, run
from va_testing import md5_of


@pytest.fixture(scope="module")
def spliced(vtdec):
    work = vtdec.work
    original, modified = work / "vui-original.h264", work / "vui-modified.h264"
    spliced, reference = work / "vui-spliced.h264", work / "vui-reference.yuv"
    run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=60", "pattern=ball", "!",
         "video/x-raw,format=I420,width=320,height=240,framerate=30/1", "!", "x264enc", "key-int-max=30", "bframes=2",
         "speed-preset=ultrafast", "!", "video/x-h264,stream-format=byte-stream,profile=high", "!", "filesink",
         f"location={original}"], vtdec.env)
    run(["ffmpeg", "-v", "error", "-y", "-i", original, "-c", "copy", "-bsf:v",
         "h264_metadata=colour_primaries=9:transfer_characteristics=16:matrix_coefficients=9:video_full_range_flag=1",
         modified], vtdec.env)
    run([SYSTEM_PYTHON, Path(__file__).parent / "splice_sps.py", original, modified, spliced, 10], vtdec.env)
    run(["gst-launch-1.0", "-q", "filesrc", f"location={original}", "!", "h264parse", "!", "avdec_h264", "!",
         "video/x-raw,format=I420", "!", "filesink", f"location={reference}"], vtdec.env)
    return spliced, md5_of(reference)


@pytest.fixture(scope="module")
def decoded(vtdec, spliced):
    return vtdec.decode(spliced[0], "require", SWIFTVT_VA_LOG=1)


def test_pictures_are_the_originals(decoded, spliced):
    assert decoded.status == 0, f"ended by {decoded.ended_by}: {decoded.errors}"
    assert decoded.md5 == spliced[1], "not avdec_h264's pictures of the original stream"


def test_one_va_context(decoded):
    assert decoded.status == 0, f"ended by {decoded.ended_by}: {decoded.errors}"
    assert decoded.log.count("vaCreateContext:") == 1
