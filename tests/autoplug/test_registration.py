"""Registration matches the machine (issue 15; was tests/autoplug.sh 1): without a VA device
vtdec_hw and vtenc_h264_hw have rank none (never autoplugged); with one (the software VA driver)
they outrank vtdec/vtenc (secondary + 1) and vtdec_hw's sink caps list the profiles the device
decodes. Read from the registry through Python GI."""
import re

import pytest

from autoplug_testing import factories

EXPECTED_RANK = {"no-device": 0, "software-va": 129}


@pytest.mark.parametrize("element", ["vtdec_hw", "vtenc_h264_hw"])
def test_hardware_element_rank(mode, mode_env, element):
    assert factories(mode_env, element)[element]["rank"] == EXPECTED_RANK[mode]


def test_vtdec_hw_sink_caps_list_the_devices_profiles(device_env):
    caps = factories(device_env, "vtdec_hw")["vtdec_hw"]["templates"]["sink"]
    profiles = re.search(r"profile=\(string\)\{ ([^}]*) \}", caps)
    assert profiles, caps
    assert [p.strip() for p in profiles.group(1).split(",")][:4] == ["constrained-baseline",
                                                                     "baseline", "main", "high"], caps
