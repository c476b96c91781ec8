"""Fixtures of the parity suite (tests/parity/test_parity_*.py; issue 16: SwiftVT and its peer,
x264enc, avdec_h264 or h264parse, in the same pipelines), beside the shared ones of
tests/conftest.py. Helpers: tests/lib/parity_testing.py.

- `parity_env` (session): `plugin_env` once the suite's inputs are there (the corpus, FFmpeg);
- `manifest` (session): the corpus's h264/MANIFEST.tsv, {file: row}; `stream(name)`: a corpus
  stream's path (required);
- `runner` (module): a PipelineRunner whose runs several tests assert on; `work` (module): a folder.
"""
import csv
import shutil

import pytest

from swiftvt_testing import PipelineRunner, corpus_root, require


@pytest.fixture(scope="session")
def parity_env(plugin_env):
    corpus = corpus_root()
    require((corpus / "h264" / "MANIFEST.tsv").is_file(),
            f"parity: the test corpus {corpus} (set SWIFTVT_CORPUS to the corpus folder)")
    require(shutil.which("ffprobe"), "parity: ffprobe (FFmpeg), the reference reader of the encoded files")
    require(shutil.which("ffmpeg"), "parity: ffmpeg, which makes the Matroska file of row 7 and decodes row 5's output")
    return plugin_env


@pytest.fixture(scope="session")
def manifest(parity_env):
    with open(corpus_root() / "h264" / "MANIFEST.tsv", newline="") as table:
        return {row["file"]: row for row in csv.DictReader(table, delimiter="\t")}


@pytest.fixture(scope="session")
def stream(parity_env):
    def path(name):
        found = corpus_root() / "h264" / name
        require(found.is_file(), f"parity: the corpus stream {name}")
        return found
    return path


@pytest.fixture(scope="module")
def runner(parity_env, tmp_path_factory):
    return PipelineRunner(parity_env, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("parity")
