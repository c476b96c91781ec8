"""Fixtures of the decoding parity suite (tests/parity_decoding/test_decoding_*.py; issue 32
round 2: vtdec or h264parse-to-avcc beside avdec_h264 or h264parse in the same pipelines), beside
the shared ones of tests/conftest.py. The pipelines that may fail run in the Python GI helpers
beside the tests (held_frames.py, live_latency.py, raw_seek.py, reconfigure_format.py), each with
its own deadline.

- `decoding_env` (session): `plugin_env` once the corpus, avdec_h264 and x264enc are there;
  `va_env` (session): the same on the software VA driver (vtdec_hw decodes on it);
- `src720` (session): the 720p corpus clip; `seek_mp4` (session): it at 640x360, GOPs of 30 with
  B-frames, in MP4 (the issue's clip);
- `helper(name, *args, env=...)`: a helper's stdout lines.
"""
import subprocess
from pathlib import Path

import pytest

from swiftvt_testing import SYSTEM_PYTHON, corpus_root, corpus_stream, require, run

HERE = Path(__file__).parent


def element_available(env, name):
    return subprocess.run(["gst-inspect-1.0", name], env=env, capture_output=True, timeout=60).returncode == 0


@pytest.fixture(scope="session")
def decoding_env(plugin_env):
    corpus = corpus_root()
    require((corpus / "h264" / "MANIFEST.tsv").is_file(),
            f"parity-decoding: the test corpus {corpus} (set SWIFTVT_CORPUS to the corpus folder)")
    require(element_available(plugin_env, "avdec_h264"), "parity-decoding: avdec_h264 "
            "(gstreamer1.0-libav), the peer decoder")
    require(element_available(plugin_env, "x264enc"),
            "parity-decoding: x264enc (gstreamer1.0-plugins-ugly), which makes the test clips")
    return plugin_env


@pytest.fixture(scope="session")
def va_env(decoding_env, software_va):
    return software_va.env(decoding_env)


@pytest.fixture(scope="session")
def src720(decoding_env):
    return corpus_stream("h264", "VID_1280x720_cabac_temporal_direct.264", "parity-decoding")


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("decoding")


@pytest.fixture(scope="session")
def seek_mp4(decoding_env, src720, work):
    path = work / "seek.mp4"
    run(["gst-launch-1.0", "-q", "filesrc", f"location={src720}", "!", "h264parse", "!",
         "avdec_h264", "!", "videoscale",
         "!", "video/x-raw,width=640,height=360", "!", "x264enc", "key-int-max=30", "bframes=2", "!", "mp4mux", "!",
         "filesink", f"location={path}"], decoding_env, timeout=300)
    return path


@pytest.fixture(scope="session")
def helper():
    def call(name, *args, env, timeout=120):
        """stdout's lines of HELPER ARGS (whatever its exit status: the tests judge its report)."""
        try:
            result = subprocess.run([SYSTEM_PYTHON, str(HERE / f"{name}.py"), *map(str, args)], env=env,
                                    capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name}.py {' '.join(map(str, args))} did not finish in {timeout} s")
        return result.stdout.splitlines()
    return call
