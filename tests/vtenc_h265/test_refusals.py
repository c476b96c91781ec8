"""What vtenc_h265 refuses, each with one ERROR from SwiftVT that says what to do (issue 37 item 2):
hardware=require at the state change (SwiftVT has no hardware HEVC encoder), interlaced input at
the caps (HEVC codes fields only as pictures with SEI, which the x265 backend does not write)."""
from parity_testing import assert_one_swiftvt_error


def test_hardware_require_fails_at_the_state_change(runner):
    result = runner.error("videotestsrc num-buffers=5 ! vtenc_h265 name=enc hardware=require ! fakesink",
                          timeout=60)
    assert result.ended_by == "state-change-failure", result.ended_by
    assert_one_swiftvt_error(result, r"^enc: hardware=require, but there is no hardware HEVC encoder in SwiftVT.*"
                             r"hardware=auto or hardware=disable")


def test_interlaced_input_is_refused_at_the_caps(runner):
    result = runner.error("videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=320,height=240,"
                          "interlace-mode=interleaved ! vtenc_h265 name=enc ! fakesink", timeout=60)
    assert_one_swiftvt_error(result, r"^enc: interlace-mode=interleaved is not encoded as HEVC.*deinterlace")


def test_a_picture_under_64x64_does_not_link(runner):
    """x265's coding tree block here is 64x64: the sink template says so (x265enc's smallest is 16)."""
    result = runner("videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=48,height=64 ! vtenc_h265 ! "
                    "fakesink", timeout=60)
    assert result.status != 0 or result.ended_by != "eos", result.log[-2000:]
