"""frame_num gaps (8.2.5.2) on NVDEC: the frames inferred for a gap are DPB entries flagged
not_existing with PicIdx -1 (cuviddec.h), and the last pictures, which predict from a fixed index
of lists that count the inferred frames, decode as libavcodec decodes them. The stream is
tests/lib/frame_num_gap_stream.py's (an x264 Baseline stream given two frame_num gaps).

    /usr/bin/python3 -m pytest -q tests/vtdec_cuda/test_frame_num_gaps.py
"""
import pytest

from frame_num_gap_stream import make_frame_num_gap_stream
from va_testing import raw_md5

FRAMES = 12
FRAME_SIZE = 128 * 96 * 3 // 2


@pytest.fixture(scope="module")
def gap_stream(vtdec):
    return make_frame_num_gap_stream(vtdec.work, vtdec.env, "vtdec-cuda")


def test_decoded_on_nvdec_like_libavcodec(gap_stream, vtdec):
    result = vtdec.decode(gap_stream, "require", frame_size=FRAME_SIZE)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.frames == FRAMES
    assert result.md5 == raw_md5(gap_stream, vtdec.env)
    assert result.report.count("VALIDATION") == 0, result.report.first("VALIDATION")
    assert (result.backend or "").startswith("NVDEC"), result.backend
