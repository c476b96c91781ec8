"""Faults injected in the software CUDA double, each with the hardware policy's behaviour: under
`auto` software takes over (at the start, or mid-stream from the next IDR picture with one
WARNING), under `require` one clear ERROR from vtdec; never a hang (every run is under a 120 s
limit), nothing left alive at exit. A picture NVDEC reports damaged (cuvidGetDecodeStatus
Error) is output, marked, and decoding goes on on the device.

    /usr/bin/python3 -m pytest -q tests/vtdec_cuda/test_fault_injection.py -k lost
"""
import pytest

from swiftvt_testing import require, run
from va_testing import ffmpeg_has_libx264

SOFTWARE = "libavcodec (software)"
QCIF_FRAME = 38016   # 176x144 I420
STREAM, RESOURCE = "gst-stream-error-quark", "gst-resource-error-quark"
# Failures before the first picture: cuInit (no usable driver), the context, the decoder, the
# decoder's surfaces (out of memory at the first surface).
SETUP_FAILURES = {"SWIFTVT_CUDA_FAIL=init": (RESOURCE, 3), "SWIFTVT_CUDA_FAIL=create-context": (RESOURCE, 3),
                  "SWIFTVT_CUDA_FAIL=create-decoder": (STREAM, 7), "SWIFTVT_CUDA_OUT_OF_MEMORY_AT=1": (STREAM, 7)}
# Failures mid-stream, at picture 5 of MIDR_MW_D (an IDR picture every few pictures): the call
# failing, the device lost (every later call fails: a sticky error).
MID_STREAM_FAILURES = ["SWIFTVT_CUDA_FAIL_DECODE=5:call", "SWIFTVT_CUDA_DEVICE_LOST=5"]


def variables(injection):
    return dict(item.split("=", 1) for item in injection.split())


def fault(vtdec, stream, hardware, injection):
    result = vtdec.decode(stream.path, hardware, timeout=120, frame_size=QCIF_FRAME, **variables(injection))
    assert result.status != 124, f"{injection} {hardware}: hung"
    assert result.report.leaks == [], result.report.leaks
    return result


def assert_software_exact(result, stream):
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.md5 == stream.ref_md5
    assert (result.backend or "").startswith(SOFTWARE), f"active-backend {result.backend!r}"


def assert_one_clean_error(result, expected, words):
    assert result.status != 0, f"expected an ERROR, ended by {result.ended_by}"
    error = result.errors[0]
    assert error["element"] == "vtdec", error
    assert (error["domain"], error["code"]) == expected, error
    assert error["message"].startswith("vtdec: "), error["message"]
    text = error["message"] + " " + (error["debug"] or "")
    assert any(word in text for word in words), text


@pytest.mark.parametrize("injection", SETUP_FAILURES)
def test_auto_falls_back_to_software_at_the_start(vtdec, small, injection):
    assert_software_exact(fault(vtdec, small, "auto", injection), small)


@pytest.mark.parametrize("injection", SETUP_FAILURES)
def test_require_errors_at_the_start(vtdec, small, injection):
    result = fault(vtdec, small, "require", injection)
    assert_one_clean_error(result, SETUP_FAILURES[injection],
                           ["cuInit", "cuCtxCreate", "cuvidCreateDecoder", "CUDA_ERROR", "NVDEC"])
    assert result.frames == 0


@pytest.mark.parametrize("injection", MID_STREAM_FAILURES)
def test_auto_goes_on_in_software_from_the_next_idr(vtdec, multi, injection):
    result = fault(vtdec, multi, "auto", injection)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert 0 < result.frames <= multi.frames
    warnings = [w for w in result.warnings if (w["element"], w["domain"], w["code"]) == ("vtdec", STREAM, 7)]
    assert any("decoding goes on in software" in w["message"] for w in warnings), result.warnings
    assert (result.backend or "").startswith(SOFTWARE), f"active-backend {result.backend!r}"


@pytest.mark.parametrize("injection", MID_STREAM_FAILURES)
def test_require_ends_in_one_decode_error(vtdec, multi, injection):
    result = fault(vtdec, multi, "require", injection)
    assert_one_clean_error(result, (STREAM, 7), ["cuvidDecodePicture", "CUDA_ERROR"])
    assert len([e for e in result.errors if e["element"] == "vtdec"]) == 1, result.errors


@pytest.mark.parametrize("hardware", ["auto", "require"])
def test_a_damaged_picture_is_output_and_decoding_goes_on_on_the_device(vtdec, multi, hardware):
    """cuvidGetDecodeStatus says cuvidDecodeStatus_Error for picture 5 (the double fills it
    green): every frame comes out on NVDEC, the damaged one counted as corrupt (max-errors), no
    switch to software and no ERROR."""
    result = fault(vtdec, multi, hardware, "SWIFTVT_CUDA_FAIL_DECODE=5:status")
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.frames == multi.frames
    assert result.md5 != multi.ref_md5
    assert "corrupt data in a frame: " in result.log and "cuvidDecodeStatus_Error" in result.log
    assert (result.backend or "").startswith("NVDEC"), f"active-backend {result.backend!r}"
    assert "decoding goes on in software" not in result.log and "now decoding with libavcodec" not in result.log


@pytest.fixture(scope="module")
def size_change(vtdec):
    """Two x264 streams of 10 pictures, 128x96 then 176x144, one after the other: the second
    sequence needs a decoder of its own (10 surfaces each here, so the 11th surface is the first of
    the second decoder)."""
    require(ffmpeg_has_libx264(vtdec.env), "vtdec-cuda: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)")
    parts = []
    for size in ("128x96", "176x144"):
        part = vtdec.work / f"part-{size}.264"
        run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25",
             "-frames:v", "10", "-c:v", "libx264", "-x264-params", "keyint=5", "-f", "h264", part], vtdec.env)
        parts.append(part.read_bytes())
    joined = vtdec.work / "size-change.264"
    joined.write_bytes(b"".join(parts))
    return joined


def test_out_of_memory_at_the_second_decoder_falls_back_under_auto(vtdec, size_change):
    """Out of memory when the second sequence's decoder is made (mid-stream): the first 10
    pictures on NVDEC, the rest in software, all 20 of them as libavcodec decodes them (vtdec
    hardware=disable: FFmpeg's rawvideo output would scale the second size to the first)."""
    clean = vtdec.decode(size_change, "require", timeout=120)
    software = vtdec.decode(size_change, "disable", timeout=120)
    assert clean.status == 0 and software.status == 0, clean.errors + software.errors
    result = vtdec.decode(size_change, "auto", timeout=120, SWIFTVT_CUDA_OUT_OF_MEMORY_AT=11)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.md5 == clean.md5 == software.md5
    assert (result.backend or "").startswith(SOFTWARE), result.backend
    assert result.report.count("FAULT") >= 1, result.report.text[-1000:]
    assert result.report.leaks == [], result.report.leaks


def test_out_of_memory_at_the_second_decoder_is_one_error_under_require(vtdec, size_change):
    result = vtdec.decode(size_change, "require", timeout=120, SWIFTVT_CUDA_OUT_OF_MEMORY_AT=11)
    assert result.status != 124
    assert_one_clean_error(result, (STREAM, 7), ["CUDA_ERROR_OUT_OF_MEMORY"])
    assert result.report.leaks == [], result.report.leaks
