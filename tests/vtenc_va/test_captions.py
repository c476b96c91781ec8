"""Closed captions through the VA-API encoder (issue 36 row "captions"): GstVideoCaptionMeta on
vtenc's input frames becomes an A/53 user data SEI NAL unit sent as a raw packed header
(VAEncPackedHeaderRawData) with its picture, after the parameter sets and before the slice
(H.264 7.4.1.2.3), as vah264enc does; decoded back by vtdec and avdec_h264 into the same cc_data
in frame order. A device that takes no raw packed headers encodes the pictures and drops the
captions with one WARNING saying so. (x264 and x265: tests/encoder_controls/test_captions.py.)"""
import subprocess

from captions_testing import captions_in_presentation_order, expected, write
from encoder_controls_testing import field_values, trace_headers
from swiftvt_testing import require
from va_client_testing import driver_env

FRAMES = 20


def encode(va_env, work, name, **variables):
    require(subprocess.run(["gst-inspect-1.0", "--exists", "ccextractor"], env=va_env).returncode == 0,
            "vtenc-va captions: GStreamer's ccextractor (gstreamer1.0-plugins-bad)")
    env, _, _ = driver_env(va_env, work, name, **variables)
    path = work / f"{name}.h264"
    result = write(env, "cea708-raw", f"vtenc hardware=require name=vtenc ! video/x-h264,stream-format=byte-stream "
                   f"! filesink location={path}", FRAMES)
    return path, result


def test_captions_go_out_as_raw_packed_sei(encoder_device, va_env, tmp_path):
    path, result = encode(va_env, tmp_path, "va-captions")
    assert result["warnings"] == [], result
    assert field_values(trace_headers(va_env, path), "itu_t_t35_country_code") == [0xB5] * FRAMES
    for decoder in ("h264parse-to-avcc ! vtdec hardware=disable", "h264parse ! avdec_h264"):
        captions, frames = captions_in_presentation_order(va_env, f"filesrc location={path} ! {decoder}")
        assert frames == FRAMES
        assert captions == expected("cea708-raw", FRAMES), decoder


def test_a_device_without_raw_packed_headers_drops_them_once_with_a_warning(encoder_device, va_env, tmp_path):
    path, result = encode(va_env, tmp_path, "va-captions-no-raw", SWIFTVT_VA_ENCODE_PACKED="sequence,picture,slice")
    dropped = [w for w in result["warnings"] if "closed captions are dropped" in w]
    assert len(dropped) == 1 and "VA_ENC_PACKED_HEADER_RAW_DATA" in dropped[0], result["warnings"]
    assert field_values(trace_headers(va_env, path), "itu_t_t35_country_code") == []
    _, frames = captions_in_presentation_order(va_env, f"filesrc location={path} ! h264parse ! avdec_h264")
    assert frames == FRAMES
