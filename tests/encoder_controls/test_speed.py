"""Speed over quality (issue 36 row "speed/quality trade-off"): prioritize-speed (VideoToolbox's
PrioritizeEncodingSpeedOverQuality; x264enc speed-preset, vah264enc target-usage) codes with the
encoders' fast preset without realtime's limits: x264's veryfast refers to one frame (the PPS's
num_ref_idx_l0_default_active_minus1 0 instead of medium's 2, read by FFmpeg's trace_headers) and
keeps its B pictures; x265 codes another stream, B pictures kept. (VA-API's quality level:
tests/vtenc_va/test_rate_parameters.py.)"""
from encoder_controls_testing import encode_stream, field_values, trace_headers

SOURCE = "videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"
B_SLICE = {"h264": (1, 6), "h265": (0,)}


def encode(runner, work, encoder, codec, properties):
    path = work / f"speed-{encoder}-{'-'.join(properties) or 'default'}.{codec}"
    return encode_stream(runner, path, SOURCE, f"{encoder} {' '.join(properties)}", codec)


def test_x264_refers_to_one_frame_and_keeps_b_pictures(runner, work, controls_env):
    default = trace_headers(controls_env, encode(runner, work, "vtenc", "h264", []))
    fast = trace_headers(controls_env, encode(runner, work, "vtenc", "h264", ["prioritize-speed=true"]))
    assert set(field_values(default, "num_ref_idx_l0_default_active_minus1")) == {2}
    assert set(field_values(fast, "num_ref_idx_l0_default_active_minus1")) == {0}
    assert any(t in B_SLICE["h264"] for t in field_values(fast, "slice_type"))


def test_x265_codes_another_stream_with_b_pictures(runner, work, controls_env):
    default = encode(runner, work, "vtenc_h265", "h265", [])
    fast = encode(runner, work, "vtenc_h265", "h265", ["prioritize-speed=true"])
    assert fast.read_bytes() != default.read_bytes()
    assert any(t in B_SLICE["h265"] for t in field_values(trace_headers(controls_env, fast), "slice_type"))
