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
import itertools
import shutil

import pytest

from swiftvt_testing import PipelineRunner, corpus_root, require, run
from va_testing import Report, frames_in, md5_of, read_manifest

VTDEC = "vtdec"   # the element's name in every pipeline, for its properties


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


class VtdecVA:
    def __init__(self, env, work):
        self.env, self.work = env, work
        self.runs = itertools.count()

    def run(self, *description, timeout=120, **variables):
        """A pipeline with the driver's `variables`; the result has `.report` (the driver's)."""
        number = next(self.runs)
        report = self.work / f"run{number}.report"
        env = dict(self.env, GST_DEBUG="vtdec:4", GST_DEBUG_NO_COLOR="1", SWIFTVT_VA_REPORT=str(report))
        env.update({k: str(v) for k, v in variables.items()})
        result = PipelineRunner(env, self.work)(*description, timeout=timeout, properties=("active-backend",))
        result.report = Report(report)
        return result

    def decode(self, stream, hardware, timeout=300, frame_size=None, downstream="video/x-raw,format=I420",
               **variables):
        output = self.work / f"out{next(self.runs)}.yuv"
        result = self.run("filesrc", f"location={stream}", "!", "h264parse-to-avcc", "!", "vtdec", f"name={VTDEC}",
                          f"hardware={hardware}", "!", *downstream.split(), "!", "filesink", f"location={output}",
                          timeout=timeout, **variables)
        result.md5 = md5_of(output)
        result.frames = frames_in(output, frame_size) if frame_size else None
        output.unlink(missing_ok=True)
        result.backend = result.property(VTDEC, "active-backend")
        return result


@pytest.fixture(scope="session")
def vtdec(va_env, tmp_path_factory):
    return VtdecVA(va_env, tmp_path_factory.mktemp("vtdec-va"))


@pytest.fixture(scope="session")
def small(manifest):
    return manifest["BA_MW_D.264"]


@pytest.fixture(scope="session")
def multi(manifest):
    return manifest["MIDR_MW_D.264"]
