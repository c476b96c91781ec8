"""frame_num gaps (8.2.5.2): inferred frames are surfaces in ReferenceFrames.
tests/lib/frame_num_gap_stream.py turns an x264 Baseline stream into one with two frame_num gaps whose last
pictures predict from a fixed index of lists that count the inferred frames; the nvdec and mesa
personalities check that every inferred frame is in ReferenceFrames (those devices build their
lists from it), which fails when the inferred frames get no surface.

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_frame_num_gaps.py -k nvdec
"""
import os

import pytest

from frame_num_gap_stream import make_frame_num_gap_stream
from swiftvt_testing import run
from va_testing import raw_md5

FRAMES = 12
FRAME_SIZE = 128 * 96 * 3 // 2


@pytest.fixture(scope="module")
def gap_stream(vtdec):
    return make_frame_num_gap_stream(vtdec.work, vtdec.env, "vtdec-va")


def test_libavcodec_decodes_the_last_frames_as_copies(gap_stream, vtdec):
    """The last two frames are copies of the last x264 frame (exactly, no residual)."""
    out = run(["ffmpeg", "-nostdin", "-v", "error", "-i", gap_stream, "-f", "framemd5", "-"], vtdec.env)
    hashes = [line.split(",")[5].strip() for line in out.splitlines() if line and not line.startswith("#")]
    assert len(set(hashes[-3:])) == 1, "libavcodec does not decode its last two frames as copies of frame 10"


@pytest.mark.parametrize("personality", [os.environ.get("SWIFTVT_VA_PERSONALITY", ""), "nvdec", "mesa"],
                         ids=["environment", "nvdec", "mesa"])
def test_decoded_on_the_device_like_libavcodec(gap_stream, vtdec, personality):
    result = vtdec.decode(gap_stream, "require", frame_size=FRAME_SIZE, SWIFTVT_VA_PERSONALITY=personality,
                          SWIFTVT_VA_SELFCHECK=1)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.frames == FRAMES
    assert result.md5 == raw_md5(gap_stream, vtdec.env)
    assert result.report.count("VALIDATION") == 0, result.report.first("VALIDATION")
    assert "VA-API" in (result.backend or ""), result.backend
