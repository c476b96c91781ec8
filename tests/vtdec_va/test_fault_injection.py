"""Fault injection: each injected failure ends in software fallback (auto) or one clean ERROR from
vtdec (require), never a hang (every run is under a 120 s limit), and nothing is leaked at
vaTerminate. A damaged picture (VA_STATUS_ERROR_DECODING_ERROR) is output on the device and
decoding goes on there; a busy engine (HW_BUSY) is retried. No VA device at all (no DISPLAY): auto
decodes in software, require fails with an error saying what was tried.

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_fault_injection.py -k busy
"""
import os

import pytest

SOFTWARE = "libavcodec (software)"
QCIF_FRAME = 38016   # 176x144 I420
SETUP_FAILURES = ["SWIFTVT_VA_FAIL=create-config", "SWIFTVT_VA_FAIL=create-context",
                  "SWIFTVT_VA_FAIL=create-surfaces", "SWIFTVT_VA_BUSY=1"]
NO_DEVICE = "DISPLAY="
# A device failure at picture 5: software takes over at the next IDR picture.
END_PICTURE_FAILED = "SWIFTVT_VA_FAIL_END_PICTURE=5:operation-failed"
# The ERROR each failure ends in under require: a device that offers no usable configuration has
# no decoder for the stream (CODEC_NOT_FOUND), one that fails while decoding a DECODE error, no
# device (or a busy one, which answers nothing) a resource NOT_FOUND.
STREAM, RESOURCE = "gst-stream-error-quark", "gst-resource-error-quark"
REQUIRE_ERRORS = {"SWIFTVT_VA_FAIL=create-config": (STREAM, 6), "SWIFTVT_VA_FAIL=create-context": (STREAM, 7),
                  "SWIFTVT_VA_FAIL=create-surfaces": (STREAM, 7), "SWIFTVT_VA_BUSY=1": (RESOURCE, 3),
                  NO_DEVICE: (RESOURCE, 3), END_PICTURE_FAILED: (STREAM, 7)}
DAMAGED_PICTURES = ["SWIFTVT_VA_FAIL_END_PICTURE=5", "SWIFTVT_VA_SYNC_ERROR=decoding-error:5"]


def variables(injection):
    return dict(item.split("=", 1) for item in injection.split())


def fault(vtdec, stream, hardware, injection):
    result = vtdec.decode(stream.path, hardware, timeout=120, frame_size=QCIF_FRAME, **variables(injection))
    assert result.status != 124, f"{injection} {hardware}: hung"
    return result


def assert_software_exact(result, stream):
    """auto: software decoded everything exactly."""
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.md5 == stream.ref_md5
    assert result.report.leaks == []
    assert (result.backend or "").startswith(SOFTWARE), f"active-backend {result.backend!r}"


def assert_one_clean_error(result, injection):
    """require: the run ends in vtdec's ERROR (the upstream element's "Internal data stream error"
    may follow), with the domain and code of REQUIRE_ERRORS and a message that says what went wrong."""
    assert result.status != 0, f"expected an ERROR, ended by {result.ended_by}"
    assert result.errors, "no ERROR"
    error = result.errors[0]
    assert error["element"] == "vtdec", error
    assert (error["domain"], error["code"]) == REQUIRE_ERRORS[injection], error
    assert error["message"].startswith("vtdec: "), error["message"]
    assert result.report.leaks == []
    return error


def assert_software_from_next_idr(result):
    """auto, failure mid-stream: a WARNING from vtdec, software from the next IDR, the end reached."""
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.frames > 0
    assert result.report.leaks == []
    warnings = [w for w in result.warnings if (w["element"], w["domain"], w["code"]) == ("vtdec", STREAM, 7)]
    assert any("decoding goes on in software" in w["message"] for w in warnings), result.warnings
    assert (result.backend or "").startswith(SOFTWARE), f"active-backend {result.backend!r}"


@pytest.mark.parametrize("injection", SETUP_FAILURES + [NO_DEVICE])
def test_auto_falls_back_to_software(vtdec, small, injection):
    assert_software_exact(fault(vtdec, small, "auto", injection), small)


@pytest.mark.parametrize("injection", SETUP_FAILURES)
def test_require_errors(vtdec, small, injection):
    assert_one_clean_error(fault(vtdec, small, "require", injection), injection)


def test_require_without_a_device_says_what_was_tried(vtdec, small):
    error = assert_one_clean_error(fault(vtdec, small, "require", NO_DEVICE), NO_DEVICE)
    assert "no VA-API display could be opened" in error["message"] + (error["debug"] or ""), error
    print(f"require without a device says: {error['message'][:300]}"
          + (" (this machine has DRM render nodes: tried too)" if any(n.startswith("renderD") for n in
             (os.listdir("/dev/dri") if os.path.isdir("/dev/dri") else [])) else ""))


def test_device_failure_mid_stream_auto_goes_on_in_software(vtdec, multi):
    assert_software_from_next_idr(fault(vtdec, multi, "auto", END_PICTURE_FAILED))


def test_device_failure_mid_stream_require_errors(vtdec, multi):
    assert_one_clean_error(fault(vtdec, multi, "require", END_PICTURE_FAILED), END_PICTURE_FAILED)


@pytest.mark.parametrize("hardware", ["auto", "require"])
@pytest.mark.parametrize("injection", DAMAGED_PICTURES)
def test_damaged_picture_is_output_and_decoding_goes_on_on_the_device(vtdec, multi, injection, hardware):
    """VA_STATUS_ERROR_DECODING_ERROR (va.h: the picture is damaged, the device goes on), from
    vaEndPicture or vaSyncSurface (iHD): every frame comes out on the VA path, the damaged one
    counted as corrupt (max-errors), no switch to software and no ERROR."""
    result = fault(vtdec, multi, hardware, injection)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.frames == multi.frames
    assert result.report.leaks == []
    assert "corrupt data in a frame: " in result.log and "VA_STATUS_ERROR_DECODING_ERROR" in result.log
    assert "VA-API" in (result.backend or ""), f"active-backend {result.backend!r}"
    assert "decoding goes on in software" not in result.log and "now decoding with libavcodec" not in result.log


def test_busy_sync_is_retried_on_the_device(vtdec, multi):
    """HW_BUSY at vaSyncSurface is a passing state: retried, nothing to report, every picture exact."""
    result = fault(vtdec, multi, "require", "SWIFTVT_VA_SYNC_ERROR=hw-busy:5")
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.md5 == multi.ref_md5
    assert result.report.leaks == []
    assert result.warnings == [] and "WARN" not in result.log
    assert "decoding goes on in software" not in result.log and "now decoding with libavcodec" not in result.log


@pytest.fixture(scope="module")
def refused_slice(vtdec, multi):
    """A slice refused by vaRenderPicture in the middle of a picture (nvdec personality)."""
    return fault(vtdec, multi, "auto", "SWIFTVT_VA_FAIL_RENDER=7 SWIFTVT_VA_PERSONALITY=nvdec")


def test_refused_slice_auto_goes_on_in_software(refused_slice):
    assert_software_from_next_idr(refused_slice)


def test_refused_slice_leaves_no_picture_open(refused_slice):
    """The picture already begun is still ended on the device (nvidia-vaapi-driver would otherwise
    decode its slices with the next picture): the driver finds no open picture when the context goes."""
    assert refused_slice.report.count("VALIDATION.*never ended") == 0, refused_slice.report.first("VALIDATION")
