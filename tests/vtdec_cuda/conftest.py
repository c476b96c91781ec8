"""Fixtures for the tests of vtdec's NVDEC (CUDA) path against SwiftVT's software CUDA double
(tests/cuda-driver/: libcuda.so.1 and libnvcuvid.so.1 with the real ABI, found first in
LD_LIBRARY_PATH) (tests/vtdec_cuda/test_*.py):

- `manifest` (session): the corpus's h264/MANIFEST.tsv as {name: Stream} (tests/lib/va_testing.py);
- `cuda_env` (session): `plugin_env` with the double first in LD_LIBRARY_PATH and a registry of
  its own (the plugin registers vtdec_hw where a device decodes H.264);
- `vtdec`: `vtdec.decode(STREAM, HARDWARE, VARIABLE=value...)` runs
  `filesrc ! h264parse-to-avcc ! vtdec hardware-device=cuda ! video/x-raw,format=I420 ! filesink`
  through the bus-watching runner (tests/lib/run-pipeline.py, under a time limit: a hang is a
  failure) with the double's variables and report (`result.report`: VALIDATION lines, the
  live-objects line at exit); the result has the output's MD5 and frame count and vtdec's
  active-backend;
- `small` (BA_MW_D.264, 100 frames) and `multi` (MIDR_MW_D.264, an IDR picture every few frames).

No VA-API device is visible to these runs (DISPLAY unset, no render node here), so `auto` means
NVDEC or software. Without the corpus the tests are skipped (failed under
SWIFTVT_REQUIRE_TEST_INPUTS). Environment: SWIFTVT_PLUGIN, SWIFTVT_CORPUS, SWIFTVT_CUDA_DRIVER_DIR.
"""
import re

import pytest

from swiftvt_testing import corpus_root, require, run
from va_testing import read_manifest
from vtdec_device_testing import VtdecOnDevice


@pytest.fixture(scope="session")
def manifest():
    root = corpus_root()
    require((root / "h264" / "MANIFEST.tsv").is_file(),
            f"vtdec-cuda: test corpus not found at {root} (set SWIFTVT_CORPUS to the folder holding h264/MANIFEST.tsv)")
    return read_manifest(root)


@pytest.fixture(scope="session")
def cuda_env(plugin_env, software_cuda, tmp_path_factory):
    env = software_cuda.env(plugin_env)
    env.pop("DISPLAY", None)
    env["GST_REGISTRY"] = str(tmp_path_factory.mktemp("cuda-registry") / "registry.bin")
    # The registry scan loads the plugin, which probes the CUDA device for vtdec_hw: done once
    # here, so that it is not counted in the first test's run.
    run(["gst-inspect-1.0", "vtdec"], env)
    return env


class Report:
    """The double's report file: every VALIDATION line and the live-objects line of each exit."""

    def __init__(self, path):
        self.text = path.read_text() if path.exists() else ""
        self.lines = self.text.splitlines()

    def count(self, kind):
        return sum(1 for line in self.lines if f" {kind}:" in line or line.startswith(f"{kind}:"))

    def first(self, kind):
        return next((line for line in self.lines if kind in line), None)

    @property
    def leaks(self):
        """live-objects lines with a count other than zero."""
        return [line for line in self.lines if line.startswith("live-objects")
                and any(int(n) for n in re.findall(r"=(\d+)", line))]

    @property
    def exits(self):
        return sum(1 for line in self.lines if line.startswith("live-objects"))


class VtdecCUDA(VtdecOnDevice):
    """`decode(..., device=...)`: vtdec's hardware-device, cuda unless said."""

    def __init__(self, env, work):
        super().__init__(env, work, "SWIFTVT_CUDA_REPORT", Report)

    def decode(self, stream, hardware, device="cuda", **options):
        return super().decode(stream, hardware, vtdec_properties=[f"hardware-device={device}"], **options)


@pytest.fixture(scope="session")
def vtdec(cuda_env, tmp_path_factory):
    return VtdecCUDA(cuda_env, tmp_path_factory.mktemp("vtdec-cuda"))


@pytest.fixture(scope="session")
def small(manifest):
    return manifest["BA_MW_D.264"]


@pytest.fixture(scope="session")
def multi(manifest):
    return manifest["MIDR_MW_D.264"]
