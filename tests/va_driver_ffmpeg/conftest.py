"""Fixtures for the tests of FFmpeg's own VA-API client (an independent client) on SwiftVT's
software VA driver (tests/va-driver/) on a private Xvfb display (tests/va_driver_ffmpeg/test_*.py):

- `manifest` (session): the corpus's h264/MANIFEST.tsv as {name: Stream} (tests/lib/va_testing.py);
- `ffmpeg_va` (session): `ffmpeg_va.decode(STREAM, pix_fmt=..., options=..., VARIABLE=value...)`
  runs FFmpeg's VA client with the driver's variables, frames read back with hwdownload, under
  timeout 300; the Run has the exit status (124: timed out), stderr, the driver's report and the
  output file.

The whole suite also runs with SWIFTVT_VA_PERSONALITY set in the environment (every run then has
that personality unless a test sets another). Without the corpus, FFmpeg or Xvfb the tests are
skipped (failed under SWIFTVT_REQUIRE_TEST_INPUTS). Environment: SWIFTVT_CORPUS,
SWIFTVT_VA_DRIVER_DIR, SWIFTVT_FFMPEG_PARAMLOG_DIR (keep the driver's normalised parameter log of
each corpus stream there, <stream>.paramlog, for comparison with another client).
"""
import itertools
import os
import shutil

import pytest

from swiftvt_testing import corpus_root, require
from va_testing import ffmpeg_va_command, md5_of, read_manifest, run_command


@pytest.fixture(scope="session")
def manifest():
    root = corpus_root()
    require((root / "h264" / "MANIFEST.tsv").is_file(),
            f"va-driver-ffmpeg: test corpus not found at {root} (set SWIFTVT_CORPUS to the folder "
            "holding h264/MANIFEST.tsv)")
    for tool in ("ffmpeg", "ffprobe"):
        require(shutil.which(tool), f"va-driver-ffmpeg: {tool} not found (Debian package ffmpeg; "
                "scripts/install-deps.sh installs it)")
    return read_manifest(root)


class FFmpegVA:
    def __init__(self, env, display, work):
        self.env, self.display, self.work = env, display, work
        self.runs = itertools.count()

    def decode(self, stream, pix_fmt="yuv420p", options=(), output=None, timeout=300, **variables):
        number = next(self.runs)
        report = self.work / f"run{number}.report"
        output = output or self.work / f"run{number}.yuv"
        env = dict(self.env, SWIFTVT_VA_REPORT=str(report), **{k: str(v) for k, v in variables.items()})
        command = ffmpeg_va_command(self.display, stream, *options, pix_fmt=pix_fmt, output=output)
        run = run_command(command, env, timeout=timeout, report=report)
        run.output = output
        run.md5 = md5_of(output) if str(output) != "/dev/null" else None
        return run


@pytest.fixture(scope="session")
def ffmpeg_va(manifest, software_va, tmp_path_factory):
    return FFmpegVA(software_va.env(dict(os.environ)), software_va.display, tmp_path_factory.mktemp("ffmpeg-va"))


@pytest.fixture(scope="session")
def small(manifest):
    """A short stream for the error paths."""
    return manifest["BA_MW_D.264"]
