"""Fault injection on BA_MW_D.264: each SWIFTVT_VA_FAIL value and a busy device end in a clean
FFmpeg error, a failed vaEndPicture in a reported decoding error after which decoding goes on;
never a hang (every run is under timeout 300).

    /usr/bin/python3 -m pytest -q tests/va_driver_ffmpeg/test_fault_injection.py
"""
import re

import pytest

SETUP_FAILURES = ["SWIFTVT_VA_FAIL=create-config", "SWIFTVT_VA_FAIL=create-context",
                  "SWIFTVT_VA_FAIL=create-surfaces", "SWIFTVT_VA_BUSY=1"]


def first_complaint(log):
    """FFmpeg's first line about a failure (the driver's own lines left out)."""
    for line in log.splitlines():
        if not line.startswith("swiftvt_sw") and re.search("fail|error|busy", line, re.IGNORECASE):
            return re.sub(r"^\[[^]]*\] ", "", line)
    return None


@pytest.mark.parametrize("injection", SETUP_FAILURES)
def test_setup_failure_is_a_clean_error(ffmpeg_va, small, injection):
    variable, value = injection.split("=")
    result = ffmpeg_va.decode(small.path, **{variable: value})
    assert result.status != 124, f"{injection}: ffmpeg hung"
    assert result.status != 0, f"{injection}: FFmpeg did not fail"
    assert first_complaint(result.log), f"{injection}: FFmpeg failed without an error message"


def test_failed_end_picture_is_reported_and_decoding_goes_on(ffmpeg_va, small):
    """One picture fails: FFmpeg reports it and goes on; the display is terminated normally."""
    result = ffmpeg_va.decode(small.path, SWIFTVT_VA_FAIL_END_PICTURE=5)
    assert result.status != 124, "ffmpeg hung"
    assert "Failed to end picture" in result.log, "the failed vaEndPicture was not reported"
    assert result.report.terminated > 0, "the display was not terminated"
    assert result.report.leaks == []
