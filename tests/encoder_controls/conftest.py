"""Fixtures of the encoder-controls suite (tests/encoder_controls/test_*.py; issue 36: the
VideoToolbox keys and peer controls of vtenc, vtenc_h265 and vtmultipasssink), beside the shared
ones of tests/conftest.py.

- `controls_env` (session): `plugin_env` once FFmpeg (the independent reader of the streams: its
  trace_headers bitstream filter prints every syntax element) is there;
- `work` (module): a folder; `runner` (module): a PipelineRunner in it.
"""
import shutil

import pytest

from swiftvt_testing import PipelineRunner, require


@pytest.fixture(scope="session")
def controls_env(plugin_env):
    require(shutil.which("ffmpeg"), "encoder-controls: ffmpeg, whose trace_headers filter reads the streams back")
    return plugin_env


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("encoder_controls")


@pytest.fixture(scope="module")
def runner(controls_env, work):
    return PipelineRunner(controls_env, work)
