"""Interlaced coding (x264 interlaced=1): refused by the VA path with a clear reason under require
(vtdec's ERROR, the reason in its user-facing message), decoded in software under auto, equal to
libavcodec's decoding.

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_interlaced.py
"""
import pytest

from swiftvt_testing import require, run
from va_testing import ffmpeg_has_libx264, raw_md5


@pytest.fixture(scope="module")
def interlaced(vtdec):
    require(ffmpeg_has_libx264(vtdec.env),
            "vtdec-va: interlaced case: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)")
    stream = vtdec.work / "interlaced.264"
    run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=352x288:rate=25", "-frames:v",
         "10", "-c:v", "libx264", "-flags", "+ildct+ilme", "-x264-params", "interlaced=1", "-f",
         "h264", stream], vtdec.env)
    return stream


def test_require_refuses_it_with_the_reason(vtdec, interlaced):
    result = vtdec.decode(interlaced, "require")
    assert result.status != 0, f"ended by {result.ended_by}"
    error = result.errors[0]
    assert (error["element"], error["domain"], error["code"]) == ("vtdec", "gst-stream-error-quark", 6), error
    assert "interlaced coding" in error["message"] and "not supported by the VA path" in error["message"], error


def test_auto_decodes_it_in_software(vtdec, interlaced):
    result = vtdec.decode(interlaced, "auto")
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.md5 == raw_md5(interlaced, vtdec.env)
    assert (result.backend or "").startswith("libavcodec (software)"), result.backend
