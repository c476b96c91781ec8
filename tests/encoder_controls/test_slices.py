"""Slices per picture (issue 36 row "slices"): slices=N (x264enc slices, vah264enc num-slices) codes N
slices in every picture of vtenc's (x264) and vtenc_h265's (x265) streams, counted by FFmpeg's
trace_headers (a new picture starts at first_mb_in_slice 0, H.264 7.4.3; at
first_slice_segment_in_pic_flag 1, H.265 7.4.7.1), and the stream decodes to every frame; the
default codes one. (VA-API, which codes one slice: tests/vtenc_va/test_refusals.py.)"""
import pytest

from encoder_controls_testing import field_values, trace_headers
from parity_testing import decoded_frames

SOURCE = "videotestsrc num-buffers=20 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"


def slices_per_picture(trace, codec):
    if codec == "h264":
        starts = field_values(trace, "first_mb_in_slice")
        pictures = [i for i, first in enumerate(starts) if first == 0]
    else:
        starts = field_values(trace, "first_slice_segment_in_pic_flag")
        pictures = [i for i, first in enumerate(starts) if first == 1]
    return [b - a for a, b in zip(pictures, pictures[1:] + [len(starts)])]


@pytest.mark.parametrize("encoder, codec", [("vtenc", "h264"), ("vtenc_h265", "h265")])
@pytest.mark.parametrize("slices", [None, 4])
def test_every_picture_has_the_slices(runner, work, controls_env, encoder, codec, slices):
    path = work / f"slices-{encoder}-{slices}.{codec}"
    setting = f"slices={slices}" if slices else ""
    runner.eos(f"{SOURCE} ! {encoder} {setting} ! video/x-{codec},stream-format=byte-stream ! "
               f"filesink location={path}", timeout=120)
    counts = slices_per_picture(trace_headers(controls_env, path), codec)
    assert counts == [slices or 1] * 20, counts
    assert decoded_frames(controls_env, path) == 20
