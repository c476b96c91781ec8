"""Fixtures for the tests of two independent NVDEC clients, FFmpeg's (-hwaccel cuda) and GStreamer's
nvcodec plugin (nvh264sldec, on GstH264Decoder), on SwiftVT's software CUDA double
(tests/cuda-driver/; tests/cuda_driver_clients/test_*.py):

- `manifest` (session): the corpus's h264/MANIFEST.tsv as {name: Stream} (tests/lib/va_testing.py);
- `cuda` (session): `cuda.run(command, VARIABLE=value...)` runs a command with the double first in
  LD_LIBRARY_PATH, a fresh report file (SWIFTVT_CUDA_REPORT) and a private GStreamer registry,
  under a timeout; the CudaRun has the exit status (124: timed out), the log and the report lines;
- `reference_md5` (session): the MD5 a stream must decode to: MANIFEST.tsv's ref_md5, or this
  machine's libavcodec's when its own software decoding does not reproduce ref_md5 either.

Without the corpus or FFmpeg the tests are skipped (failed under SWIFTVT_REQUIRE_TEST_INPUTS).
Environment: SWIFTVT_CORPUS, SWIFTVT_CUDA_DRIVER_DIR.
"""
import itertools
import os
import re
import shutil
import subprocess

import pytest

from swiftvt_testing import corpus_root, require
from va_testing import md5_of, raw_md5, read_manifest


@pytest.fixture(scope="session")
def manifest():
    root = corpus_root()
    require((root / "h264" / "MANIFEST.tsv").is_file(),
            f"cuda-driver-clients: test corpus not found at {root} (set SWIFTVT_CORPUS to the folder "
            "holding h264/MANIFEST.tsv)")
    for tool in ("ffmpeg", "ffprobe"):
        require(shutil.which(tool), f"cuda-driver-clients: {tool} not found (Debian package ffmpeg; "
                "scripts/install-deps.sh installs it)")
    return read_manifest(root)


class CudaRun:
    def __init__(self, status, log, report_path, output):
        self.status, self.log, self.output = status, log, output
        self.report = report_path.read_text(errors="replace").splitlines() if report_path.is_file() else []
        self.md5 = md5_of(output) if output else None

    def lines(self, pattern):
        return [line for line in self.report if re.search(pattern, line)]

    @property
    def pictures(self):
        """Pictures decoded by the double (its decoder-destroyed lines)."""
        found = (re.search(r"decoder-destroyed pictures=(\d+)", line) for line in self.report)
        return sum(int(m.group(1)) for m in found if m)

    @property
    def leaks(self):
        return [line for line in self.lines("^live-objects") if re.search(r"=[1-9]", line)]


class Cuda:
    def __init__(self, env, work):
        self.env, self.work = env, work
        self.runs = itertools.count()

    def run(self, command, output=None, timeout=300, **variables):
        number = next(self.runs)
        report = self.work / f"run{number}.report"
        env = dict(self.env, SWIFTVT_CUDA_REPORT=str(report), GST_REGISTRY=str(self.work / "registry.bin"),
                   **{k: str(v) for k, v in variables.items()})
        try:
            done = subprocess.run([str(c) for c in command], env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, errors="replace", timeout=timeout)
            status, log = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as expired:
            status, log = 124, str(expired)
        return CudaRun(status, log, report, output)


@pytest.fixture(scope="session")
def cuda(software_cuda, tmp_path_factory):
    env = software_cuda.env(os.environ)
    env.pop("SWIFTVT_CUDA_REPORT", None)
    return Cuda(env, tmp_path_factory.mktemp("cuda-clients"))


@pytest.fixture(scope="session")
def reference_md5(manifest):
    """reference_md5(name, got): ref_md5, or this machine's libavcodec's own decoding when that differs
    from ref_md5 and `got` differs too (a different libavcodec, not the double, is then the cause)."""
    cache = {}

    def md5(name, got):
        stream = manifest[name]
        if got == stream.ref_md5:
            return got
        if name not in cache:
            cache[name] = raw_md5(stream.path, dict(os.environ), "-flags", "unaligned", "-threads", "1")
        return cache[name] if cache[name] != stream.ref_md5 else stream.ref_md5

    return md5
