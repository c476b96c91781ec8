"""Registration matches the machine (issue 15; was tests/autoplug.sh 1): without a hardware device
vtdec_hw and vtenc_h264_hw have rank none (never autoplugged); with a VA one (the software VA
driver) they outrank vtdec/vtenc (secondary + 1); with a CUDA device whose NVDEC decodes H.264 (the
software CUDA double, issue 34) vtdec_hw does and vtenc_h264_hw stays out (SwiftVT encodes on
VA-API only). vtdec_hw's sink caps list the profiles the device decodes. Read from the registry
through Python GI."""
import re

import pytest

from autoplug_testing import factories

EXPECTED_RANK = {("no-device", "vtdec_hw"): 0, ("no-device", "vtenc_h264_hw"): 0,
                 ("software-va", "vtdec_hw"): 129, ("software-va", "vtenc_h264_hw"): 129,
                 ("software-cuda", "vtdec_hw"): 129, ("software-cuda", "vtenc_h264_hw"): 0}


@pytest.mark.parametrize("element", ["vtdec_hw", "vtenc_h264_hw"])
def test_hardware_element_rank(mode, mode_env, element):
    assert factories(mode_env, element)[element]["rank"] == EXPECTED_RANK[(mode, element)]


@pytest.mark.parametrize("env_name", ["device_env", "cuda_env"])
def test_vtdec_hw_sink_caps_list_the_devices_profiles(request, env_name):
    caps = factories(request.getfixturevalue(env_name), "vtdec_hw")["vtdec_hw"]["templates"]["sink"]
    profiles = re.search(r"profile=\(string\)\{ ([^}]*) \}", caps)
    assert profiles, caps
    assert [p.strip() for p in profiles.group(1).split(",")][:4] == ["constrained-baseline",
                                                                     "baseline", "main", "high"], caps
