"""Fixtures of the encoder formats suite (tests/encoder_formats/test_formats_*.py; issue 32 rows 9,
14 and 15: vtenc against x264enc in the same pipelines, on x264 (hardware=disable) and on the
software VA driver, hardware=require), beside the shared ones of tests/conftest.py. Helpers:
tests/lib/encoder_formats_testing.py.

- `formats_env` (session): `plugin_env` once the corpus's 720p clip and FFmpeg are there; `va_env`
  (session): the same on the software VA driver; `runner` / `va_runner` (module): PipelineRunners
  in each; `work` (module): a folder;
- `hd_source` (session): the 720p clip's first 60-odd frames, decoded (the issue's clip).
"""
import shutil

import pytest

from swiftvt_testing import PipelineRunner, corpus_root, require


@pytest.fixture(scope="session")
def formats_env(plugin_env):
    hd_stream = corpus_root() / "h264" / "VID_1280x720_cabac_temporal_direct.264"
    require(hd_stream.is_file(), f"encoder-formats: the corpus's 720p clip {hd_stream} (set "
            "SWIFTVT_CORPUS to the corpus folder)")
    require(shutil.which("ffprobe"), "encoder-formats: ffprobe (FFmpeg), the reference reader of the encoded files")
    require(shutil.which("ffmpeg"), "encoder-formats: ffmpeg, which demuxes the transport stream and measures PSNR")
    return plugin_env


@pytest.fixture(scope="session")
def va_env(formats_env, software_va):
    return software_va.env(formats_env)


@pytest.fixture(scope="session")
def hd_source(formats_env):
    hd_stream = corpus_root() / "h264" / "VID_1280x720_cabac_temporal_direct.264"
    return f"filesrc location={hd_stream} ! h264parse ! avdec_h264 ! identity eos-after=60 ! video/x-raw,format=I420"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("formats")


@pytest.fixture(scope="module")
def runner(formats_env, work):
    return PipelineRunner(formats_env, work)


@pytest.fixture(scope="module")
def va_runner(va_env, work):
    return PipelineRunner(va_env, work)
