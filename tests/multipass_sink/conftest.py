"""Fixtures for vtmultipasssink's end-to-end tests (tests/multipass_sink/test_*.py), beside the
shared ones of tests/conftest.py:

- `clip` (session): the 300-frame 720p raw I420 clip decoded from the corpus 720p stream;
- `short_clip` (session): its first 60 frames; `frames_clip(n)`: its first n frames.

Helpers: tests/lib/multipass_sink_testing.py. Needs the corpus and FFmpeg.
"""
import pytest

from multipass_sink_testing import FRAME_BYTES
from swiftvt_testing import corpus_root, require, require_tools

STREAM = "h264/VID_1280x720_cabac_temporal_direct.264"


@pytest.fixture(scope="session")
def sink_env(plugin_env):
    require_tools("ffmpeg", "ffprobe")
    return plugin_env


@pytest.fixture(scope="session")
def clip(sink_env, media):
    root = corpus_root()
    stream = root / STREAM
    require(stream.is_file(), f"multipass-sink: test corpus not found at {root} (needs {STREAM.split('/')[1]}; "
                              "set SWIFTVT_CORPUS to the corpus folder)")
    path = media.directory / "clip720.yuv"
    if not path.exists():
        media.ffmpeg("-i", stream, "-frames:v", 300, "-pix_fmt", "yuv420p", "-f", "rawvideo", path, timeout=300)
    return path


@pytest.fixture(scope="session")
def frames_clip(clip):
    def make(frames):
        path = clip.with_name(f"clip{frames}.yuv")
        if not path.exists():
            with open(clip, "rb") as whole:
                path.write_bytes(whole.read(FRAME_BYTES * frames))
        return path
    return make


@pytest.fixture(scope="session")
def short_clip(frames_clip):
    return frames_clip(60)
