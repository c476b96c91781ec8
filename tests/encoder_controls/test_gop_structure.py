"""B-frames and references (issue 36 row "B-frames, references"): b-frames (vah264enc's b-frames,
x264enc's bframes; VideoToolbox only has AllowFrameReordering) bounds the B pictures in a row, and
reference-buffer-count (VideoToolbox's ReferenceBufferCount) the reference frames the SPS declares
(H.264 max_num_ref_frames, 7.4.2.1.1), read back by FFmpeg's trace_headers from vtenc's (x264) and
vtenc_h265's (x265) streams, each against the unbounded default; contradictions (B-frames with
allow-frame-reordering=false or realtime) are one ERROR naming the property. (VA-API:
tests/vtenc_va/test_rate_parameters.py.)"""
import pytest

from encoder_controls_testing import field_values, trace_headers
from parity_testing import assert_one_swiftvt_error

SOURCE = "videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"
# slice_type (H.264 Table 7-6: 1 and 6 are B; H.265 Table 7-7: 0 is B).
B_SLICE = {"h264": (1, 6), "h265": (0,)}


def coded(runner, work, controls_env, encoder, properties, codec):
    path = work / f"{encoder}-{'-'.join(properties) or 'default'}.{codec}"
    runner.eos(f"{SOURCE} ! {encoder} {' '.join(properties)} ! video/x-{codec},stream-format=byte-stream ! "
               f"filesink location={path}", timeout=120)
    return trace_headers(controls_env, path)


def longest_b_run(trace, codec):
    """The most B pictures in a row, in decoding order (B pictures between two anchors are coded
    one after another between them)."""
    longest = run = 0
    for slice_type in field_values(trace, "slice_type"):
        run = run + 1 if slice_type in B_SLICE[codec] else 0
        longest = max(longest, run)
    return longest


@pytest.mark.parametrize("encoder, codec", [("vtenc", "h264"), ("vtenc_h265", "h265")])
def test_b_frames_bound_the_b_pictures_in_a_row(runner, work, controls_env, encoder, codec):
    default = longest_b_run(coded(runner, work, controls_env, encoder, [], codec), codec)
    assert default >= 2, f"the default codes {default} B pictures in a row at most"
    assert longest_b_run(coded(runner, work, controls_env, encoder, ["b-frames=0"], codec), codec) == 0
    one = longest_b_run(coded(runner, work, controls_env, encoder, ["b-frames=1"], codec), codec)
    assert one == 1, f"b-frames=1 coded {one} in a row"


def test_reference_buffer_count_bounds_max_num_ref_frames(runner, work, controls_env):
    default = field_values(coded(runner, work, controls_env, "vtenc", [], "h264"), "max_num_ref_frames")
    assert default and default[0] > 2, default
    two = coded(runner, work, controls_env, "vtenc", ["reference-buffer-count=2"], "h264")
    assert field_values(two, "max_num_ref_frames")[0] <= 2
    one = coded(runner, work, controls_env, "vtenc", ["reference-buffer-count=1"], "h264")
    assert field_values(one, "max_num_ref_frames")[0] == 1
    assert longest_b_run(one, "h264") == 0, "one reference leaves no room for B pictures"


@pytest.mark.parametrize("properties, text", [
    ("b-frames=2 allow-frame-reordering=false", r"b-frames.*2 B-frames need frame reordering"),
    ("b-frames=2 realtime=true", r"b-frames.*2 B-frames would hold frames back"),
], ids=["no-reordering", "realtime"])
def test_contradictions_are_one_error(runner, properties, text):
    result = runner.error(f"{SOURCE} ! vtenc name=enc {properties} ! fakesink")
    assert_one_swiftvt_error(result, r"^enc: .*" + text)
