"""Colorimetry (issue 36 row "HDR/colour", item 4): the raw caps' colorimetry becomes the VUI's
video_signal_type (H.264 E.2.1, H.265 E.3.1: video_full_range_flag, colour_primaries,
transfer_characteristics, matrix_coefficients), as x264enc and x265enc write it from the same caps,
for vtenc, vtenc_h265 and vtmultipasssink; 10-bit BT.2100 PQ and HLG run end to end through
vtenc_h265 and back out of vtdec as the same colorimetry in its caps. Read back by FFmpeg's
trace_headers and ffprobe, independently of SwiftVT's own VUI parser."""
import re

import pytest

from encoder_controls_testing import encode_stream, field_values, trace_headers
from swiftvt_testing import run

SIGNAL_FIELDS = ("video_full_range_flag", "colour_primaries", "transfer_characteristics", "matrix_coefficients")
# H.273 code points: (full range, primaries, transfer, matrix).
CASES = {
    "": (0, 1, 1, 1),  # no colorimetry in the caps: GStreamer's default for 720p, BT.709
    ",colorimetry=bt601": (0, 6, 6, 6),
    ",colorimetry=bt709": (0, 1, 1, 1),
    ",colorimetry=1:3:5:1": (1, 1, 1, 1),  # GStreamer's full-range BT.709 (range:matrix:transfer:primaries)
    ",colorimetry=bt2020": (0, 9, 15, 9),  # GStreamer's bt2020 is the 12-bit transfer
}


def signal_type(env, path):
    trace = trace_headers(env, path)
    values = tuple(field_values(trace, name)[:1] for name in SIGNAL_FIELDS)
    assert all(values), f"no video_signal_type in {path}: {values}"
    return tuple(value[0] for value in values)


def encode(runner, work, encoder, codec, caps, name):
    source = f"videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=1280,height=720,framerate=30/1{caps}"
    return encode_stream(runner, work / f"colour-{name}.{codec}", source, encoder, codec)


@pytest.mark.parametrize("caps", list(CASES), ids=lambda caps: caps.split("=")[-1] or "default")
@pytest.mark.parametrize("encoder, peer, codec", [("vtenc", "x264enc", "h264"), ("vtenc_h265", "x265enc", "h265")])
def test_the_vui_says_what_the_caps_say_as_the_peer_writes_it(runner, work, controls_env, encoder, peer, codec, caps):
    label = caps.split("=")[-1].replace(":", "-") or "default"
    ours = signal_type(controls_env, encode(runner, work, encoder, codec, caps, f"{encoder}-{label}"))
    assert ours == CASES[caps]
    theirs = signal_type(controls_env, encode(runner, work, peer, codec, caps, f"{peer}-{label}"))
    assert ours == theirs


def test_vtmultipasssink_writes_the_caps_colorimetry(runner, work, controls_env):
    path = work / "colour-multipass.h264"
    runner.eos("videotestsrc num-buffers=30 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1,"
               f"colorimetry=bt601 ! vtmultipasssink bitrate=300 location={path}", timeout=180)
    assert signal_type(controls_env, path) == (0, 6, 6, 6)


@pytest.mark.parametrize("colorimetry, transfer, name", [("bt2100-pq", 16, "smpte2084"),
                                                         ("bt2100-hlg", 18, "arib-std-b67")])
def test_ten_bit_hdr_runs_end_to_end(runner, work, controls_env, colorimetry, transfer, name):
    path = work / f"colour-{colorimetry}.mp4"
    runner.eos("videotestsrc num-buffers=10 ! video/x-raw,format=I420_10LE,width=320,height=240,framerate=30/1,"
               f"colorimetry={colorimetry} ! vtenc_h265 ! h265parse ! mp4mux ! filesink location={path}", timeout=120)
    probe = run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries",
                 "stream=profile,pix_fmt,color_primaries,color_transfer,color_space", "-of", "csv=p=0", path],
                controls_env).strip()
    assert probe == f"Main 10,yuv420p10le,bt2020nc,{name},bt2020", probe  # ffprobe: space, transfer, primaries
    assert signal_type(controls_env, path)[1:] == (9, transfer, 9)
    # vtdec reads the VUI back into its output caps, as avdec_h265 does.
    caps = {}
    for decoder in ("vtdec", "avdec_h265"):
        log = run(["gst-launch-1.0", "-v", "filesrc", f"location={path}", "!", "qtdemux", "!", "h265parse", "!",
                   decoder, "!", "fakesink", "name=sink"], controls_env)
        caps[decoder] = re.findall(r"sink\.GstPad:sink: caps = .*?colorimetry=\(string\)([\w:-]+)", log)
    assert caps["vtdec"] and caps["vtdec"][-1] == colorimetry, caps
    assert caps["vtdec"][-1] == caps["avdec_h265"][-1], caps
