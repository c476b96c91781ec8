"""Fixtures for every pytest test under tests/ (helpers: tests/lib/swiftvt_testing.py).

- `plugin_env` (session): the environment of a GStreamer process with the built plugin;
- `pipeline`: runs a pipeline description through tests/lib/run-pipeline.py (`pipeline.eos(...)`,
  `pipeline.error(...)`: the result has each ERROR's element, GError domain and code);
- `media` (session): inputs made at test time; `probe` (session): ffprobe's answers;
- `corpus` (session): the conformance corpus folder (../shared/corpus; SWIFTVT_CORPUS);
- `software_va` (session): the software VA driver on a private Xvfb display (`software_va.env(plugin_env)`);
- `software_cuda` (session): the software CUDA/NVDEC double (tests/cuda-driver/) built in a temporary folder
  (or SWIFTVT_CUDA_DRIVER_DIR): `software_cuda.env(base)` puts it first in LD_LIBRARY_PATH.
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


class SoftwareCUDA:
    """The software CUDA double (libcuda.so.1, libnvcuvid.so.1) built by scripts/build-software-cuda.sh."""

    def __init__(self, directory):
        import subprocess
        from swiftvt_testing import ROOT
        self.directory = directory
        build = subprocess.run(["bash", str(ROOT / "scripts" / "build-software-cuda.sh"), str(directory)],
                               capture_output=True, text=True, timeout=600)
        assert build.returncode == 0, f"build-software-cuda.sh failed: {build.stderr[-3000:]}"

    def env(self, base):
        env = dict(base)
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = str(self.directory) + (":" + old if old else "")
        return env


@pytest.fixture(scope="session")
def software_cuda(tmp_path_factory):
    import os
    from pathlib import Path
    return SoftwareCUDA(Path(os.environ.get("SWIFTVT_CUDA_DRIVER_DIR") or tmp_path_factory.mktemp("cuda-driver")))
