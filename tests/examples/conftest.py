"""Fixtures for the sessions API examples (tests/examples/test_*.py; Examples/, README "Examples"):

- `examples_bin` (session): the folder of the three example programs, built with `swift build`
  into SWIFTVT_EXAMPLES_SCRATCH (meson passes swift-test's scratch path, a shared debug build;
  default .build);
- `manifest` (session): the corpus's h264/MANIFEST.tsv as {file: fields}.
Needs the corpus and FFmpeg.
"""
import os
import subprocess
from pathlib import Path

import pytest

from swiftvt_testing import ROOT, corpus_root, require, require_tools

PRODUCTS = ["swiftvt-example-decode", "swiftvt-example-compress", "swiftvt-example-multipass"]


@pytest.fixture(scope="session")
def manifest():
    root = corpus_root()
    path = root / "h264" / "MANIFEST.tsv"
    require(path.is_file(), f"examples: test corpus not found at {root} (set SWIFTVT_CORPUS to the folder "
            "holding h264/MANIFEST.tsv)")
    for tool in ("ffmpeg", "ffprobe"):
        require_tools(tool)
    return {line.split("\t")[0]: line.split("\t") for line in path.read_text().splitlines() if line.strip()}


@pytest.fixture(scope="session")
def examples_bin():
    scratch = os.environ.get("SWIFTVT_EXAMPLES_SCRATCH") or str(ROOT / ".build")
    failed = {}
    for product in PRODUCTS:
        result = subprocess.run(["swift", "build", "--package-path", str(ROOT), "--scratch-path", scratch, "--product",
                                 product], capture_output=True, text=True, timeout=1800)
        if result.returncode != 0:
            failed[product] = (result.stdout + result.stderr)[-2000:]
    assert failed == {}, f"the examples do not build: {failed}"
    return Path(subprocess.run(["swift", "build", "--package-path", str(ROOT), "--scratch-path",
                                scratch, "--show-bin-path"],
                               capture_output=True, text=True, timeout=600).stdout.strip())
