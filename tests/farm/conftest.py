"""Fixtures for the tests of pipelines/multipass-farm.py (tests/farm/test_*.py), beside the shared
ones of tests/conftest.py (`plugin_env`, `media`, `probe`, ...):

- `farm_env` (session): `plugin_env` with swiftvt-farm (SWIFTVT_FARM_TOOL, default build/swiftvt-farm);
- `farm`: runs the job (`farm.run(INPUT, OUTPUT, *args)` -> FarmRun with status, output, log;
  `farm.ok(...)` must succeed) under a timeout, with a private TMPDIR (`farm.leftovers()`);
- `patterns_clip` (session): the cluster tests' input (farm_testing.make_patterns_clip: 240 frames,
  8 s, five scrolling patterns, a key frame every 30 frames at most, MP4).

Helpers: tests/lib/farm_testing.py.
"""
import pytest

from farm_testing import Farm, farm_environment, make_patterns_clip
from swiftvt_testing import require_tools


@pytest.fixture(scope="session")
def farm_env(plugin_env):
    require_tools("ffprobe", "ffmpeg")
    return farm_environment(plugin_env)


@pytest.fixture
def farm(farm_env, tmp_path):
    return Farm(farm_env, tmp_path)


@pytest.fixture(scope="session")
def patterns_clip(farm_env, tmp_path_factory):
    return make_patterns_clip(farm_env, tmp_path_factory.mktemp("patterns"), "clip.mp4")
