"""Fixtures of the vtdec H.265 suite (tests/vtdec_h265/test_*.py; issue 35 items 4 and 5), beside the
shared ones of tests/conftest.py. Helpers: tests/lib/vtdec_h265_testing.py.

- `h265_corpus` (session): the corpus's h265/ folder and its MANIFEST.tsv rows ({file: row}), required;
- `runner` (module): a PipelineRunner (tests/lib/run-pipeline.py) in a folder of its own;
- `decoded` (session): every corpus stream through `filesrc ! PARSER ! vtdec verify-picture-hash=true`
  into a file, once per stream and parser, for the MD5, frame and warning tests;
- `no_device_env`: the plugin without a VA device and with a registry of its own.
"""
import csv

import pytest

from swiftvt_testing import PipelineRunner, corpus_root, require
from vtdec_h265_testing import decode_to_planes, element_available


@pytest.fixture(scope="session")
def h265_corpus(plugin_env):
    folder = corpus_root() / "h265"
    require((folder / "MANIFEST.tsv").is_file(),
            f"vtdec_h265: the H.265 test corpus {folder} (set SWIFTVT_CORPUS to the folder holding h265/)")
    with open(folder / "MANIFEST.tsv", newline="") as table:
        return folder, {row["file"]: row for row in csv.DictReader(table, delimiter="\t")}


@pytest.fixture(scope="module")
def runner(plugin_env, tmp_path_factory):
    return PipelineRunner(plugin_env, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="session")
def decoded(plugin_env, h265_corpus, tmp_path_factory):
    folder, manifest = h265_corpus
    runner = PipelineRunner(plugin_env, tmp_path_factory.mktemp("corpus-runs"))
    work = tmp_path_factory.mktemp("corpus")
    done = {}

    def get(name, parser):
        if (name, parser) not in done:
            if not element_available(plugin_env, parser):
                pytest.skip(f"{parser} is not in this plugin build (it lands with issue 35 item 3)")
            done[(name, parser)] = decode_to_planes(runner, folder / name, manifest[name], parser, work)
        return done[(name, parser)]
    return get


@pytest.fixture(scope="session")
def no_device_env(plugin_env, tmp_path_factory):
    env = {k: v for k, v in plugin_env.items() if k != "DISPLAY"}
    env.update(LIBVA_DRIVER_NAME="swiftvt-no-such-driver",
               GST_REGISTRY=str(tmp_path_factory.mktemp("registry-no-device") / "registry.bin"))
    return env
