"""Fixtures of the encoder rate-control suite (tests/encoder_rate_changes/test_rate_*.py; issue 32
rows 4-6), beside the shared ones of tests/conftest.py. Helpers: tests/lib/rate_changes_testing.py.

- `rate_env` (session): `plugin_env` once FFmpeg is there; `va_env`: the same on the software VA
  driver (vtenc hardware=require);
- `src720`: the 300-frame 1280x720 corpus clip decoded (avdec_h264) (SMALL, 60 frames of 320x240,
  is in tests/lib/rate_changes_testing.py);
- `work` (module): a folder for the streams written.
"""
import shutil

import pytest

from swiftvt_testing import require


@pytest.fixture(scope="session")
def rate_env(plugin_env):
    require(shutil.which("ffmpeg"), "encoder-rate-changes: ffmpeg, the reference decoder of the "
            "streams changed while PLAYING")
    require(shutil.which("ffprobe"), "encoder-rate-changes: ffprobe (FFmpeg)")
    return plugin_env


@pytest.fixture(scope="session")
def va_env(rate_env, software_va):
    return software_va.env(rate_env)


@pytest.fixture(scope="session")
def src720(corpus):
    stream = corpus / "h264" / "VID_1280x720_cabac_temporal_direct.264"
    require(stream.is_file(), "encoder-rate-changes: the 720p corpus clip "
            "h264/VID_1280x720_cabac_temporal_direct.264 in "
                              f"{corpus} (set SWIFTVT_CORPUS to the corpus folder)")
    return f"filesrc location={stream} ! h264parse ! avdec_h264 ! video/x-raw,format=I420"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("rate")
