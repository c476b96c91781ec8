"""Fixtures of the vtenc_h265 suite (issue 37 item 2: HEVC encoding through x265, peer x265enc),
beside the shared ones of tests/conftest.py.

- `h265_env` (session): `plugin_env` once FFmpeg and GStreamer's HEVC elements (h265parse,
  avdec_h265, mp4mux, qtdemux) are there; `work` (module): a folder; `runner` (module): a
  PipelineRunner in it;
- `hd_stream` (session): the corpus's 720p H.264 clip (300 frames at 30/1), a real picture source.
"""
import shutil
import subprocess

import pytest

from swiftvt_testing import PipelineRunner, corpus_root, require


@pytest.fixture(scope="session")
def h265_env(plugin_env):
    require(shutil.which("ffprobe"), "vtenc_h265: ffprobe (FFmpeg), the reference reader of the encoded files")
    require(shutil.which("ffmpeg"), "vtenc_h265: ffmpeg, which measures PSNR")
    for element in ("h265parse", "avdec_h265", "mp4mux", "qtdemux"):
        found = subprocess.run(["gst-inspect-1.0", "--exists", element], env=plugin_env).returncode == 0
        require(found, f"vtenc_h265: GStreamer's {element}")
    return plugin_env


@pytest.fixture(scope="session")
def hd_stream(h265_env):
    path = corpus_root() / "h264" / "VID_1280x720_cabac_temporal_direct.264"
    require(path.is_file(), f"vtenc_h265: the corpus's 720p clip {path} (set SWIFTVT_CORPUS to the corpus folder)")
    return path


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("vtenc_h265")


@pytest.fixture(scope="module")
def runner(h265_env, work):
    return PipelineRunner(h265_env, work)
