"""One VA display per process: the SwiftVT elements of a pipeline share it (the driver writes one
live-objects line at each vaTerminate, one per display opened; vtdec/vtenc log the sharing).

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_shared_display.py
"""
import os

import pytest

CASES = {
    "two-vtdec": "filesrc location={small} ! h264parse-to-avcc ! tee name=t t. ! queue ! vtdec hardware=require "
                 "! fakesink t. ! queue ! vtdec hardware=require ! fakesink",
    "vtenc-vtdec": "videotestsrc num-buffers=10 ! video/x-raw,format=I420,width=320,height=240 "
                   "! vtenc hardware=require ! vtdec hardware=require ! fakesink",
}


@pytest.mark.parametrize("case", CASES)
def test_one_display_for_all(vtdec, small, case):
    if case == "vtenc-vtdec" and os.environ.get("SWIFTVT_VA_PERSONALITY") == "nvdec":
        pytest.skip("a decode-only device (the nvdec personality) has no encoder to share with")
    result = vtdec.run(CASES[case].format(small=small.path), GST_DEBUG="vtdec:5,vtenc:5")
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.report.terminated == 1, f"{result.report.terminated} displays opened (expected 1, shared)"
    assert "shared with the other SwiftVT elements" in result.log
