"""frame_num gaps (8.2.5.2): inferred frames are surfaces in ReferenceFrames.
frame_num_gap_stream.py turns an x264 Baseline stream into one with two frame_num gaps whose last
pictures predict from a fixed index of lists that count the inferred frames; the nvdec and mesa
personalities check that every inferred frame is in ReferenceFrames (those devices build their
lists from it), which fails when the inferred frames get no surface.

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_frame_num_gaps.py -k nvdec
"""
import os
from pathlib import Path

import pytest

from swiftvt_testing import SYSTEM_PYTHON, require, run
from va_testing import ffmpeg_has_libx264, raw_md5

FRAMES = 12
FRAME_SIZE = 128 * 96 * 3 // 2


@pytest.fixture(scope="module")
def gap_stream(vtdec):
    require(ffmpeg_has_libx264(vtdec.env),
            "vtdec-va: frame_num gap case: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)")
    base, gap = vtdec.work / "gap-base.264", vtdec.work / "frame-num-gap.264"
    run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=128x96:rate=25", "-frames:v",
         "10", "-c:v", "libx264", "-profile:v", "baseline", "-x264-params", "ref=4:bframes=0:keyint=300", "-f", "h264",
         base], vtdec.env)
    run([SYSTEM_PYTHON, Path(__file__).parent / "frame_num_gap_stream.py", base, gap], vtdec.env)
    return gap


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
