"""Adaptive QP and look-ahead (issue 36 row "adaptive QP, look-ahead"): spatial-adaptive-qp=disable
(VideoToolbox's SpatialAdaptiveQPLevel = Disable; x264enc/nvh264enc aq) and lookahead (VideoToolbox's
SuggestedLookAheadFrameCount; rc-lookahead) reach the encoders: x264 opens with them (read back from
x264_encoder_parameters in Tests/SwiftVTCompressionTests) and codes another stream; x265 with neither adaptive
quantization nor cutree (which needs the look-ahead) codes no cu_qp_delta (its PPS says
cu_qp_delta_enabled_flag 0, H.265 7.4.3.3), and a look-ahead of 2 leaves room for one B picture in a
row. (VA-API: tests/vtenc_va/test_refusals.py.)"""
import pytest

from encoder_controls_testing import encode_stream, field_values, trace_headers

SOURCE = "videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"


def encode(runner, work, encoder, properties, codec):
    path = work / f"aq-{encoder}-{'-'.join(properties) or 'default'}.{codec}"
    return encode_stream(runner, path, SOURCE, f"{encoder} {' '.join(properties)}", codec)


@pytest.mark.parametrize("properties", [["spatial-adaptive-qp=disable"], ["lookahead=0"]],
                         ids=["aq-off", "lookahead-0"])
def test_x264_codes_another_stream(runner, work, properties):
    """x264 writes no options SEI here (SwiftVT keeps SEI out of the parameter sets); what it opened
    with is read back by Tests/SwiftVTCompressionTests (adaptiveQuantizationAndLookAhead): here, the
    stream changes with the property, the same source and rate otherwise."""
    default = encode(runner, work, "vtenc", [], "h264").read_bytes()
    assert encode(runner, work, "vtenc", properties, "h264").read_bytes() != default


def test_x265_without_aq_and_cutree_codes_no_cu_qp_delta(runner, work, controls_env):
    default = trace_headers(controls_env, encode(runner, work, "vtenc_h265", [], "h265"))
    flat = trace_headers(controls_env, encode(runner, work, "vtenc_h265",
                                              ["spatial-adaptive-qp=disable", "lookahead=0"], "h265"))
    assert set(field_values(default, "cu_qp_delta_enabled_flag")) == {1}
    assert set(field_values(flat, "cu_qp_delta_enabled_flag")) == {0}


def test_x265_look_ahead_of_2_leaves_one_b_picture_in_a_row(runner, work, controls_env):
    types = field_values(trace_headers(controls_env, encode(runner, work, "vtenc_h265", ["lookahead=2"], "h265")),
                         "slice_type")
    runs = "".join("B" if t == 0 else "x" for t in types).split("x")
    assert max(len(run) for run in runs) <= 1, types
