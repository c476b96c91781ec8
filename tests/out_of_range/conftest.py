"""Fixtures of the out-of-range values suite (tests/out_of_range/test_*.py), beside the shared ones
of tests/conftest.py: `runner` (module), a PipelineRunner whose runs several tests assert on."""
import shutil

import pytest

from swiftvt_testing import PipelineRunner, require


@pytest.fixture(scope="module")
def runner(plugin_env, tmp_path_factory):
    require(shutil.which("ffprobe"), "out-of-range-values: ffprobe (FFmpeg), which counts the frames written")
    return PipelineRunner(plugin_env, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("out")
