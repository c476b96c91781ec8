"""The driver's validation layer is alive: a simulated client bug (SWIFTVT_VA_TAMPER) is reported
in a VALIDATION line naming the field, and fails the picture (FFmpeg's vaEndPicture fails)."""
import pytest

from va_client_testing import PERSONALITY

pytestmark = pytest.mark.skipif(PERSONALITY == "nvdec", reason="a decode-only driver (nvdec): test_personalities.py")

TAMPERED_FIELD = {"encode-frame-num": "frame_num", "encode-ref-list": "RefPicList0"}


@pytest.fixture(scope="module")
def tampered(encoded, sources):
    def get(tamper):
        return encoded(f"tamper-{tamper}", "320x192", sources["long"], *"-coder cavlc -qp 20 -bf 2".split(),
                       SWIFTVT_VA_TAMPER=tamper)
    return get


@pytest.mark.parametrize("tamper", list(TAMPERED_FIELD))
def test_no_hang(tampered, tamper):
    assert not tampered(tamper).hung, f"tamper {tamper}: timed out"


@pytest.mark.parametrize("tamper", list(TAMPERED_FIELD))
def test_validation_names_the_field(tampered, tamper):
    report = tampered(tamper).report
    assert report.count(f"VALIDATION: encode picture [0-9]*: .*{TAMPERED_FIELD[tamper]}") > 0, report


@pytest.mark.parametrize("tamper", list(TAMPERED_FIELD))
def test_the_picture_fails(tampered, tamper):
    run = tampered(tamper)
    assert "Failed to end picture" in run.log, f"vaEndPicture did not fail (ffmpeg exit {run.status})"
