"""One hardware policy across device APIs (issue 34): `hardware-device` chooses among the devices
present (here: none on VA-API, the CUDA double's), `active-backend` says which decoded, and a
choice that cannot be met is one ERROR at the state change under require (software under auto).

    /usr/bin/python3 -m pytest -q tests/vtdec_cuda/test_devices.py
"""
import pytest

SOFTWARE = "libavcodec (software)"
RESOURCE, LIBRARY = "gst-resource-error-quark", "gst-library-error-quark"
QCIF_FRAME = 38016


def test_auto_decodes_on_the_cuda_device(vtdec, small):
    result = vtdec.decode(small.path, "auto", device="auto", frame_size=QCIF_FRAME)
    assert result.status == 0, result.errors
    assert result.md5 == small.ref_md5
    assert (result.backend or "").startswith("NVDEC (hardware: cuda:0"), result.backend


def test_the_second_of_two_devices(vtdec, small):
    result = vtdec.decode(small.path, "require", device="cuda:1", frame_size=QCIF_FRAME, SWIFTVT_CUDA_DEVICES=2)
    assert result.status == 0, result.errors
    assert result.md5 == small.ref_md5
    assert (result.backend or "").startswith("NVDEC (hardware: cuda:1"), result.backend


@pytest.mark.parametrize("device, variables, words", [
    ("cuda:1", {}, "there is no CUDA device cuda:1"),
    ("cuda", {"SWIFTVT_CUDA_DEVICES": 0}, "no CUDA device"),
    ("va", {}, "no VA-API display could be opened"),
    ("/dev/dri/renderD128", {}, "VA-API"),
])
def test_an_unmet_choice_is_one_error_at_the_state_change(vtdec, small, device, variables, words):
    result = vtdec.decode(small.path, "require", device=device, timeout=60, **variables)
    assert result.status != 0 and result.frames is None or result.frames == 0
    assert result.errors, result.log[-2000:]
    error = result.errors[0]
    assert (error["element"], error["domain"], error["code"]) == ("vtdec", RESOURCE, 3), error
    assert error["message"].startswith("vtdec: hardware=require, but no hardware device here decodes H.264"), error
    assert words in error["message"], error["message"]
    assert result.ended_by == "state-change-failure", result.ended_by


@pytest.mark.parametrize("device, variables", [("cuda:1", {}), ("cuda", {"SWIFTVT_CUDA_DEVICES": 0}), ("va", {})])
def test_an_unmet_choice_decodes_in_software_under_auto(vtdec, small, device, variables):
    result = vtdec.decode(small.path, "auto", device=device, frame_size=QCIF_FRAME, **variables)
    assert result.status == 0, result.errors
    assert result.md5 == small.ref_md5
    assert (result.backend or "").startswith(SOFTWARE), result.backend


def test_a_device_name_that_names_nothing_is_refused(vtdec, small):
    result = vtdec.decode(small.path, "auto", device="gpu0", timeout=60)
    assert result.errors, result.log[-2000:]
    error = result.errors[0]
    assert (error["element"], error["domain"], error["code"]) == ("vtdec", LIBRARY, 5), error
    assert "hardware-device=gpu0 names no device" in error["message"], error["message"]


def test_disable_never_touches_the_device(vtdec, small):
    """hardware=disable: libavcodec, and the double sees no context, decoder or map."""
    result = vtdec.decode(small.path, "disable", device="cuda", frame_size=QCIF_FRAME, SWIFTVT_CUDA_LOG=1)
    assert result.status == 0, result.errors
    assert result.md5 == small.ref_md5
    assert (result.backend or "").startswith(SOFTWARE), result.backend
    assert "cuCtxCreate" not in result.log and "cuvidCreateDecoder" not in result.log
