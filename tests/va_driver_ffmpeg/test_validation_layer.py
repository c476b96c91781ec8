"""The driver's validation layer is alive: each simulated client bug (SWIFTVT_VA_TAMPER) on a
stream with explicit weighted prediction and several reference frames (12 frames) is reported,
naming the field, and fails the picture (FFmpeg says "Failed to end picture"). Each tamper is run
once; two tests read it.

    /usr/bin/python3 -m pytest -q tests/va_driver_ffmpeg/test_validation_layer.py -k weights
"""
import functools

import pytest

TAMPERS = {"bit-offset": "slice_data_bit_offset", "ref-list": "RefPicList0", "poc": "CurrPic.TopFieldOrderCnt",
           "ref-frames": "ReferenceFrames", "weights": "weights_l0", "qp-delta": "slice_qp_delta"}


@pytest.fixture(scope="module")
def tampered(manifest, ffmpeg_va):
    rich = manifest["VID_1280x720_cabac_temporal_direct.264"]

    @functools.cache
    def decode(tamper):
        return ffmpeg_va.decode(rich.path, output="/dev/null", options=("-frames:v", "12"), SWIFTVT_VA_TAMPER=tamper)

    return decode


@pytest.mark.parametrize("tamper", TAMPERS)
def test_reported_naming_the_field(tampered, tamper):
    result = tampered(tamper)
    assert result.status != 124, f"tamper {tamper}: timed out"
    assert result.report.count(f"VALIDATION: [^:]*{TAMPERS[tamper]}") > 0, \
        f"tamper {tamper}: no VALIDATION line naming {TAMPERS[tamper]}"


@pytest.mark.parametrize("tamper", TAMPERS)
def test_fails_the_picture(tampered, tamper):
    result = tampered(tamper)
    assert result.status != 124, f"tamper {tamper}: timed out"
    assert "Failed to end picture" in result.log, f"tamper {tamper}: vaEndPicture did not fail"
