"""Fixtures of the h265parse-to-hvcc suite (tests/h265parse_to_hvcc/test_*.py; issue 35 items 3
and 5: the element beside h265parse, avdec_h265 decoding both), beside the shared ones of
tests/conftest.py. Helpers: tests/lib/h265parse_testing.py.

- `h265_env` (session): `plugin_env` once the H.265 corpus and avdec_h265 are there;
- `manifest` (session): the corpus's h265/MANIFEST.tsv, {file: row}; `stream(name)`: a corpus
  stream's path (required);
- `runner` (module): a PipelineRunner; `work` (module): a folder for the copies made at test time.
"""
import subprocess

import pytest

from h265parse_testing import manifest_path, manifest_rows
from swiftvt_testing import PipelineRunner, corpus_root, corpus_stream, require


@pytest.fixture(scope="session")
def h265_env(plugin_env):
    require(manifest_path().is_file(),
            f"h265parse-to-hvcc: the H.265 test corpus {corpus_root() / 'h265'} "
            "(set SWIFTVT_CORPUS to the corpus folder)")
    found = subprocess.run(["gst-inspect-1.0", "avdec_h265"], env=plugin_env, capture_output=True, timeout=60)
    require(found.returncode == 0, "h265parse-to-hvcc: avdec_h265 (gstreamer1.0-libav), the decoder both parsers feed")
    return plugin_env


@pytest.fixture(scope="session")
def manifest(h265_env):
    return manifest_rows()


@pytest.fixture(scope="session")
def stream(h265_env):
    return lambda name: corpus_stream("h265", name, "h265parse-to-hvcc")


@pytest.fixture(scope="module")
def runner(h265_env, tmp_path_factory):
    return PipelineRunner(h265_env, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("h265parse")
