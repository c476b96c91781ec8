"""Fixtures for the drop-in tests (tests/autoplug/test_*.py; issue 15): SwiftVT as autopluggers and
applications meet it, in two machine modes (`mode`, parametrized over the tests that run in both):

- "no-device": no VA device, also on a machine that has a GPU (no X11 display, and a driver name
  that does not exist for the render nodes): vtdec is the decoder autopluggers must pick;
- "software-va": the software VA driver on a private Xvfb (tests/conftest.py's `software_va`):
  vtdec_hw is;
- "software-cuda": no VA device, the software CUDA double (tests/conftest.py's `software_cuda`,
  libcuda.so.1 and libnvcuvid.so.1 first in LD_LIBRARY_PATH): vtdec_hw is, on NVDEC.

Each mode has its own registry (the plugin registers its hardware elements per device at load).
avdec_h264 and openh264dec are ranked out (GST_PLUGIN_FEATURE_RANK) in both.

- `stream`: the corpus stream h264/BA_MW_D.264; `reference_md5`: its avdec_md5 in MANIFEST.tsv;
- `fixture_422`: the generated 4:2:2 fixture (build/fixtures/yuv422p.264, SWIFTVT_FIXTURES);
- `mode_env(mode)`: the environment of that mode; `no_device_env`: the no-device one.
"""
import os
from pathlib import Path

import pytest

from autoplug_testing import MODES, RANKS
from swiftvt_testing import ROOT, corpus_stream, require


@pytest.fixture(scope="session")
def stream():
    return corpus_stream("h264", "BA_MW_D.264", "autoplug")


@pytest.fixture(scope="session")
def reference_md5(stream):
    for line in (stream.parent / "MANIFEST.tsv").read_text().splitlines():
        fields = line.split("\t")
        if fields[0] == "BA_MW_D.264":
            return fields[8]
    pytest.fail("BA_MW_D.264 is not in the corpus MANIFEST.tsv")


@pytest.fixture(scope="session")
def fixture_422():
    path = Path(os.environ.get("SWIFTVT_FIXTURES") or ROOT / "build" / "fixtures") / "yuv422p.264"
    require(path.is_file(), f"autoplug: the generated 4:2:2 fixture {path} (meson builds it: "
            "scripts/make-test-fixtures.sh)")
    return path


@pytest.fixture(scope="session")
def no_device_env(plugin_env, tmp_path_factory):
    env = {k: v for k, v in plugin_env.items() if k != "DISPLAY"}
    env.update(LIBVA_DRIVER_NAME="swiftvt-no-such-driver", GST_PLUGIN_FEATURE_RANK=RANKS,
               GST_REGISTRY=str(tmp_path_factory.mktemp("registry-no-device") / "registry.bin"))
    return env


@pytest.fixture(scope="session")
def device_env(plugin_env, software_va, tmp_path_factory):
    return dict(software_va.env(plugin_env), GST_PLUGIN_FEATURE_RANK=RANKS,
                GST_REGISTRY=str(tmp_path_factory.mktemp("registry-software-va") / "registry.bin"))


@pytest.fixture(scope="session")
def cuda_env(no_device_env, software_cuda, tmp_path_factory):
    return dict(software_cuda.env(no_device_env),
                GST_REGISTRY=str(tmp_path_factory.mktemp("registry-software-cuda") / "registry.bin"))


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


@pytest.fixture
def mode_env(request, mode):
    return request.getfixturevalue({"no-device": "no_device_env", "software-va": "device_env",
                                    "software-cuda": "cuda_env"}[mode])
