"""Fixtures of the parity suite (tests/parity/test_parity_*.py; issue 16: SwiftVT and its peer,
x264enc, avdec_h264 or h264parse, in the same pipelines), beside the shared ones of
tests/conftest.py. Helpers: tests/lib/parity_testing.py.

- `parity_env` (session): `plugin_env` once the suite's inputs are there (the corpus, FFmpeg);
- `manifest` (session): the corpus's h264/MANIFEST.tsv, {file: row}; `stream(name)`: a corpus
  stream's path (required);
- `runner` (module): a PipelineRunner whose runs several tests assert on; `work` (module): a folder.
"""
import shutil

import pytest

from swiftvt_testing import PipelineRunner, corpus_manifest, corpus_root, corpus_stream, require


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
    return corpus_manifest("h264")


@pytest.fixture(scope="session")
def stream(parity_env):
    return lambda name: corpus_stream("h264", name, "parity")


@pytest.fixture(scope="module")
def runner(parity_env, tmp_path_factory):
    return PipelineRunner(parity_env, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("parity")
