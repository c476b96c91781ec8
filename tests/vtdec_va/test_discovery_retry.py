"""A failed device discovery is not remembered: the next session of the same elements finds the
device. va_discovery_retry.py: a Python application's first run with the driver offering no H.264
(SWIFTVT_VA_NO_H264=any) decodes and encodes in software; after the variable is unset, READY ->
PLAYING again uses VA-API (active-backend), as after a driver was installed or a permission fixed.
The application runs once; a test per element reads its line.

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_discovery_retry.py
"""
import os
import subprocess
from pathlib import Path

import pytest

from swiftvt_testing import SYSTEM_PYTHON


@pytest.fixture(scope="module")
def retried(vtdec, small):
    completed = subprocess.run([SYSTEM_PYTHON, Path(__file__).parent / "va_discovery_retry.py", small.path],
                               env=vtdec.env, capture_output=True, text=True, timeout=600)
    lines = {line.split(":")[0]: line for line in completed.stdout.splitlines()
             if line.startswith(("vtdec:", "vtenc:"))}
    return completed, lines


@pytest.mark.parametrize("element", ["vtdec", "vtenc"])
def test_second_session_uses_the_device(retried, element):
    completed, lines = retried
    if element == "vtenc" and os.environ.get("SWIFTVT_VA_PERSONALITY") == "nvdec":
        pytest.skip("the nvdec personality is a decode-only device: no encoder to find")
    assert element in lines, f"no line for {element}: {completed.stdout[-1500:]}{completed.stderr[-1500:]}"
    print(lines[element])
    assert lines[element].endswith(": ok"), lines[element]
    assert completed.returncode == 0, completed.stderr[-1500:]
