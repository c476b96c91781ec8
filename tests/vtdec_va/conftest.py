"""Fixtures for the tests of vtdec's VA-API path against SwiftVT's software VA driver
(tests/va-driver/) on a private Xvfb display (tests/vtdec_va/test_*.py):

- `manifest` (session): the corpus's h264/MANIFEST.tsv as {name: Stream} (tests/lib/va_testing.py);
- `va_env` (session): `plugin_env` with the driver's DISPLAY, LIBVA_DRIVER_NAME, LIBVA_DRIVERS_PATH;
- `vtdec`: `vtdec.decode(STREAM, HARDWARE, VARIABLE=value...)` runs
  `filesrc ! h264parse-to-avcc ! vtdec ! video/x-raw,format=I420 ! filesink` through the
  bus-watching runner (tests/lib/run-pipeline.py, under a time limit: a hang is a failure) with
  vtdec's INFO log, the driver's variables and report; the result has the runner's report (each
  ERROR's element, GError domain and code; vtdec's active-backend at the end), the driver's report,
  the output's MD5 and frame count;
- `small` (BA_MW_D.264, 100 frames) and `multi` (MIDR_MW_D.264, an IDR picture every few frames).

The whole suite also runs with SWIFTVT_VA_PERSONALITY set in the environment (every run then has
that personality unless a test sets another). Without the corpus, FFmpeg or Xvfb the tests are
skipped (failed under SWIFTVT_REQUIRE_TEST_INPUTS). Environment: SWIFTVT_PLUGIN, SWIFTVT_CORPUS,
SWIFTVT_VA_DRIVER_DIR.
"""
import shutil

import pytest

from swiftvt_testing import corpus_root, require, run
from va_testing import Report, read_manifest
from vtdec_device_testing import VtdecOnDevice


@pytest.fixture(scope="session")
def manifest():
    root = corpus_root()
    require((root / "h264" / "MANIFEST.tsv").is_file(),
            f"vtdec-va: test corpus not found at {root} (set SWIFTVT_CORPUS to the folder holding h264/MANIFEST.tsv)")
    for tool in ("ffmpeg", "ffprobe"):
        require(shutil.which(tool), f"vtdec-va: {tool} not found (Debian package ffmpeg; "
                "scripts/install-deps.sh installs it)")
    return read_manifest(root)


@pytest.fixture(scope="session")
def va_env(manifest, plugin_env, software_va):
    env = software_va.env(plugin_env)
    # The registry scan loads the plugin, which registers its elements per VA device (a display
    # opened and closed): done once here, so that it is not counted in the first test's run.
    run(["gst-inspect-1.0", "vtdec"], env)
    return env


@pytest.fixture(scope="session")
def vtdec(va_env, tmp_path_factory):
    return VtdecOnDevice(va_env, tmp_path_factory.mktemp("vtdec-va"), "SWIFTVT_VA_REPORT", Report)


@pytest.fixture(scope="session")
def small(manifest):
    return manifest["BA_MW_D.264"]


@pytest.fixture(scope="session")
def multi(manifest):
    return manifest["MIDR_MW_D.264"]
