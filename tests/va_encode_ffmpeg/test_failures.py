"""Refusals and failures end cleanly, each under a timeout: -coder cabac (REFUSED at
vaRenderPicture; under SWIFTVT_VA_PERSONALITY=ihd at vaEndPicture; Mesa stores the flag and ignores
it, test_personalities.py), CBR when the driver offers CQP only (SWIFTVT_VA_ENCODE_RC), a failed
vaEndPicture, the create-* faults, a busy device: FFmpeg fails with an error message (never a hang,
never a success) and no VA object is left at vaTerminate (when FFmpeg got as far).
"""
import re

import pytest

from va_client_testing import PERSONALITY

pytestmark = pytest.mark.skipif(PERSONALITY == "nvdec", reason="a decode-only driver (nvdec): test_personalities.py")

# name: (driver variables, FFmpeg options)
CASES = {
    "cabac": ({}, "-coder cabac -profile:v high -qp 20 -bf 0"),
    "cbr-without-cbr": ({"SWIFTVT_VA_ENCODE_RC": "cqp"}, "-coder cavlc -b:v 1M -maxrate 1M -bf 0"),
    "end-picture-fails": ({"SWIFTVT_VA_FAIL_END_PICTURE": "5"}, "-coder cavlc -qp 20 -bf 0"),
    "create-config": ({"SWIFTVT_VA_FAIL": "create-config"}, "-coder cavlc -qp 20 -bf 0"),
    "create-context": ({"SWIFTVT_VA_FAIL": "create-context"}, "-coder cavlc -qp 20 -bf 0"),
    "create-surfaces": ({"SWIFTVT_VA_FAIL": "create-surfaces"}, "-coder cavlc -qp 20 -bf 0"),
    "busy": ({"SWIFTVT_VA_BUSY": "1"}, "-coder cavlc -qp 20 -bf 0"),
}
# What FFmpeg must say (on stderr).
FFMPEG_SAYS = {"end-picture-fails": "Failed to end picture", "cbr-without-cbr": "does not support any RC mode"}


def cases():
    for name in CASES:
        marks = []
        if name == "cabac" and PERSONALITY == "mesa":
            marks = [pytest.mark.skip(reason="mesa stores the flag and ignores it: test_personalities.py")]
        yield pytest.param(name, marks=marks)


@pytest.fixture(scope="module")
def failure(encoded, sources):
    def get(name):
        variables, options = CASES[name]
        return encoded(f"fail-{name}", "320x192", sources["long"], *options.split(), **variables)
    return get


def error_message(run):
    """FFmpeg's first line about the failure (not the driver's log, the raw demuxer's or packed headers)."""
    for line in run.log.splitlines():
        if re.match(r"swiftvt_sw|\[rawvideo", line) or "packed headers" in line:
            continue
        if re.search("fail|error|support|busy", line, re.IGNORECASE):
            return re.sub(r"^\[[^]]*\] ", "", line)
    return None


@pytest.mark.parametrize("name", cases())
def test_no_hang(failure, name):
    assert not failure(name).hung, "ffmpeg hung"


@pytest.mark.parametrize("name", cases())
def test_ffmpeg_fails(failure, name):
    assert failure(name).status != 0, "ffmpeg did not fail"


@pytest.mark.parametrize("name", cases())
def test_error_message(failure, name):
    assert error_message(failure(name)), f"no error message:\n{failure(name).log[-2000:]}"


@pytest.mark.parametrize("name", cases())
def test_nothing_left_at_vaterminate(failure, name):
    assert not failure(name).report.leaks(), f"objects left at vaTerminate: {failure(name).report.leaks()}"


@pytest.mark.skipif(PERSONALITY == "mesa", reason="mesa stores the flag and ignores it: test_personalities.py")
def test_cabac_refused_in_the_report(failure):
    expected = "REFUSED encode: CABAC (entropy_coding_mode_flag 1); this driver encodes CAVLC only"
    if PERSONALITY == "ihd":
        expected = "REFUSED encode: CABAC (entropy_coding_mode_flag 1), at vaEndPicture"
    report = failure("cabac").report
    assert f"swiftvt_sw {expected}" in report.text, f"the report has no '{expected}' line: {report}"


@pytest.mark.parametrize("name", list(FFMPEG_SAYS))
def test_ffmpeg_says_why(failure, name):
    assert FFMPEG_SAYS[name] in failure(name).log, \
        f"FFmpeg did not say '{FFMPEG_SAYS[name]}': {error_message(failure(name))}"
