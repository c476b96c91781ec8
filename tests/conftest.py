"""Fixtures for every pytest test under tests/ (helpers: tests/lib/swiftvt_testing.py).

- `plugin_env` (session): the environment of a GStreamer process with the built plugin;
- `pipeline`: runs a pipeline description through tests/lib/run-pipeline.py (`pipeline.eos(...)`,
  `pipeline.error(...)`: the result has each ERROR's element, GError domain and code);
- `media` (session): inputs made at test time; `probe` (session): ffprobe's answers;
- `corpus` (session): the conformance corpus folder (../shared/corpus; SWIFTVT_CORPUS);
- `software_va` (session): the software VA driver on a private Xvfb display (`software_va.env(plugin_env)`).
"""
import pytest

from swiftvt_testing import (Media, PipelineRunner, Probe, SoftwareVA, corpus_root, plugin_environment, require,
                             require_tools)


@pytest.fixture(scope="session")
def plugin_env(tmp_path_factory):
    require_tools("gst-launch-1.0")
    return plugin_environment(tmp_path_factory.mktemp("gst"))


@pytest.fixture
def pipeline(plugin_env, tmp_path):
    return PipelineRunner(plugin_env, tmp_path)


@pytest.fixture(scope="session")
def media(plugin_env, tmp_path_factory):
    require_tools("gst-launch-1.0", "ffmpeg")
    return Media(plugin_env, tmp_path_factory.mktemp("media"))


@pytest.fixture(scope="session")
def probe(plugin_env):
    require_tools("ffprobe", "ffmpeg")
    return Probe(plugin_env)


@pytest.fixture(scope="session")
def corpus():
    root = corpus_root()
    require((root / "h264").is_dir(), f"the test corpus is not at {root} (set SWIFTVT_CORPUS to the folder "
            "holding h264/ and h265/)")
    return root


@pytest.fixture(scope="session")
def software_va(tmp_path_factory):
    import os
    from pathlib import Path
    driver_dir = Path(os.environ.get("SWIFTVT_VA_DRIVER_DIR") or tmp_path_factory.mktemp("va-driver"))
    va = SoftwareVA(driver_dir).start()
    yield va
    va.stop()
