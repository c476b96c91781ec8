"""Fixtures of the parity round 2 suite for the multi-pass sink, the demo and the interfaces
(tests/parity_misc/test_misc_*.py; issue 32), beside the shared ones of tests/conftest.py:

- `misc_env` (session): `plugin_env` once the suite's inputs are there (FFmpeg, x264enc, avdec_h264);
- `clip_source` (session): a 5-s MP4 (10 GOPs of 15 frames) that answers the duration query and delivers
  its frames again after the seek of each later pass, read through qtdemux and avdec_h264
  (the pipeline fragment); videotestsrc num-buffers=N counts across seeks, and rawvideoparse after a
  pushing filesrc reports no duration.
"""
import shutil
import subprocess

import pytest

from swiftvt_testing import require, run


def element_available(env, name):
    return subprocess.run(["gst-inspect-1.0", name], env=env, capture_output=True, timeout=60).returncode == 0


@pytest.fixture(scope="session")
def misc_env(plugin_env):
    require(shutil.which("ffmpeg"), "parity-misc: ffmpeg, which measures PSNR-Y in the demo (Debian package ffmpeg)")
    require(shutil.which("ffprobe"), "parity-misc: ffprobe (FFmpeg), which counts the frames written")
    require(element_available(plugin_env, "x264enc"),
            "parity-misc: x264enc (gstreamer1.0-plugins-ugly), which makes the MP4 that row 12 decodes")
    require(element_available(plugin_env, "avdec_h264"),
            "parity-misc: avdec_h264 (gstreamer1.0-libav), the decoder in front of vtmultipasssink in row 12")
    return plugin_env


@pytest.fixture(scope="session")
def clip_source(misc_env, tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "ball.mp4"
    run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=150", "pattern=ball", "!",
         "video/x-raw,format=I420,width=320,height=240,framerate=30/1", "!", "x264enc", "speed-preset=ultrafast",
         "bitrate=2000", "key-int-max=15", "!", "mp4mux", "!", "filesink", f"location={path}"], misc_env)
    return f"filesrc location={path} ! qtdemux ! avdec_h264"
