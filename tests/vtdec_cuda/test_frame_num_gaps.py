"""frame_num gaps (8.2.5.2) on NVDEC: the frames inferred for a gap are DPB entries flagged
not_existing with PicIdx -1 (cuviddec.h), and the last pictures, which predict from a fixed index
of lists that count the inferred frames, decode as libavcodec decodes them. The stream is
tests/vtdec_va/frame_num_gap_stream.py's (an x264 Baseline stream given two frame_num gaps).

    /usr/bin/python3 -m pytest -q tests/vtdec_cuda/test_frame_num_gaps.py
"""
from pathlib import Path

import pytest

from swiftvt_testing import SYSTEM_PYTHON, require, run
from va_testing import ffmpeg_has_libx264, raw_md5

FRAMES = 12
FRAME_SIZE = 128 * 96 * 3 // 2
GAP_STREAM_TOOL = Path(__file__).parent.parent / "vtdec_va" / "frame_num_gap_stream.py"


@pytest.fixture(scope="module")
def gap_stream(vtdec):
    require(ffmpeg_has_libx264(vtdec.env),
            "vtdec-cuda: frame_num gap case: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)")
    base, gap = vtdec.work / "gap-base.264", vtdec.work / "frame-num-gap.264"
    run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=128x96:rate=25", "-frames:v",
         "10", "-c:v", "libx264", "-profile:v", "baseline", "-x264-params", "ref=4:bframes=0:keyint=300", "-f", "h264",
         base], vtdec.env)
    run([SYSTEM_PYTHON, GAP_STREAM_TOOL, base, gap], vtdec.env)
    return gap


def test_decoded_on_nvdec_like_libavcodec(gap_stream, vtdec):
    result = vtdec.decode(gap_stream, "require", frame_size=FRAME_SIZE)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.frames == FRAMES
    assert result.md5 == raw_md5(gap_stream, vtdec.env)
    assert result.report.count("VALIDATION") == 0, result.report.first("VALIDATION")
    assert (result.backend or "").startswith("NVDEC"), result.backend
