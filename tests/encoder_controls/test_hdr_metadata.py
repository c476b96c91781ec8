"""HDR metadata (issue 36 row "HDR/colour SEI"): the caps' mastering-display-info and content-light-level
(VideoToolbox's MasteringDisplayColorVolume and ContentLightLevelInfo) become the mastering display
colour volume and content light level SEI messages of vtenc (x264, H.264 D.1.29/D.1.31) and
vtenc_h265 (x265, 10-bit BT.2100 PQ, H.265 D.2.28/D.2.35), read back field by field by FFmpeg's
trace_headers and, for HEVC, as ffprobe's frame side data; without them no such SEI is written.
(SwiftVT's own H265SEI parser: Tests/SwiftVTCompressionTests, hdrMetadataSEI; VA-API, which writes
no SEI for them: tests/vtenc_va/test_refusals.py.)"""
import pytest

from encoder_controls_testing import encode_stream, field_values, trace_headers
from swiftvt_testing import run

MASTERING = "35400:14600:8500:39850:6550:2300:15635:16450:10000000:1"  # GStreamer: R, G, B, white, max, min
EXPECTED = {"display_primaries_x": [8500, 6550, 35400], "display_primaries_y": [39850, 2300, 14600],
            "white_point_x": [15635], "white_point_y": [16450], "max_display_mastering_luminance": [10000000],
            "min_display_mastering_luminance": [1], "max_content_light_level": [1000],
            "max_pic_average_light_level": [400]}


def encode(runner, work, encoder, codec, raw_format, hdr):
    fields = f",mastering-display-info=(string){MASTERING},content-light-level=(string)1000:400" if hdr else ""
    source = (f"videotestsrc num-buffers=10 ! video/x-raw,format={raw_format},width=320,height=240,"
              f"framerate=30/1{fields}")
    return encode_stream(runner, work / f"hdr-{encoder}-{hdr}.{codec}", source, encoder, codec)


def first_sei_fields(trace):
    """Each field's values in the first access unit's SEI (the first IRAP picture's)."""
    found = {}
    for name in EXPECTED:
        values = field_values(trace, rf"{name}(?:\[\d\])?")
        found[name] = values[:len(EXPECTED[name])]
    return found


@pytest.mark.parametrize("encoder, codec, raw_format", [("vtenc", "h264", "I420"),
                                                        ("vtenc_h265", "h265", "I420_10LE")])
def test_sei_carries_the_caps_values(runner, work, controls_env, encoder, codec, raw_format):
    trace = trace_headers(controls_env, encode(runner, work, encoder, codec, raw_format, True))
    assert first_sei_fields(trace) == EXPECTED


@pytest.mark.parametrize("encoder, codec", [("vtenc", "h264"), ("vtenc_h265", "h265")])
def test_no_hdr_sei_without_the_caps(runner, work, controls_env, encoder, codec):
    trace = trace_headers(controls_env, encode(runner, work, encoder, codec, "I420", False))
    assert field_values(trace, "max_display_mastering_luminance") == []
    assert field_values(trace, "max_content_light_level") == []


def test_ffprobe_reads_the_hevc_side_data(runner, work, controls_env):
    path = encode(runner, work, "vtenc_h265", "h265", "I420_10LE", True)
    text = run(["ffprobe", "-v", "error", "-read_intervals", "%+#1", "-show_frames", path], controls_env)
    assert "side_data_type=Mastering display metadata" in text and "max_luminance=10000000/10000" in text, text
    assert "green_x=8500/50000" in text and "red_x=35400/50000" in text, text
    assert "side_data_type=Content light level metadata" in text and "max_content=1000" in text, text
