"""Constant QP per frame type (issue 36 row "fixed QP per frame type"): rate-control=cqp with qp-i,
qp-p and qp-b (vah264enc rate-control=cqp qpi/qpp/qpb, x264enc quantizer, nvh264enc qp-const-*)
codes every I, P and B picture of vtenc (x264) and vtenc_h265 (x265) at its QP, read back from each
slice header by FFmpeg's trace_headers (SliceQPY; one B picture in a row, so none is a reference
that x264/x265 would code between the B and P QPs); bitrate with cqp is one ERROR at the caps.
(VA-API: tests/vtenc_va/test_rate_parameters.py.)"""
import pytest

from encoder_controls_testing import field_values, trace_headers
from parity_testing import assert_one_swiftvt_error

SOURCE = "videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"
# slice_type to picture type: H.264 Table 7-6, H.265 Table 7-7.
TYPES = {"h264": {0: "P", 1: "B", 2: "I", 5: "P", 6: "B", 7: "I"}, "h265": {0: "B", 1: "P", 2: "I"}}


@pytest.mark.parametrize("encoder, codec", [("vtenc", "h264"), ("vtenc_h265", "h265")])
def test_each_picture_type_at_its_qp(runner, work, controls_env, encoder, codec):
    path = work / f"cqp-{encoder}.{codec}"
    runner.eos(f"{SOURCE} ! {encoder} rate-control=cqp qp-i=20 qp-p=30 qp-b=36 b-frames=1 ! "
               f"video/x-{codec},stream-format=byte-stream ! filesink location={path}", timeout=120)
    trace = trace_headers(controls_env, path)
    base = field_values(trace, "pic_init_qp_minus26") or field_values(trace, "init_qp_minus26")
    types = [TYPES[codec][t] for t in field_values(trace, "slice_type")]
    qps = [26 + base[0] + delta for delta in field_values(trace, "slice_qp_delta")]
    seen = {}
    for kind, qp in zip(types, qps):
        seen.setdefault(kind, set()).add(qp)
    assert seen == {"I": {20}, "P": {30}, "B": {36}}, seen


def test_bitrate_with_cqp_is_one_error(runner):
    result = runner.error(f"{SOURCE} ! vtenc name=enc rate-control=cqp bitrate=500 ! fakesink")
    assert_one_swiftvt_error(result, r"^enc: .*bitrate, data-rate-limits, max-bitrate and vbv-buffer-size are not used "
                                     r"with rate-control=cqp")
