"""Headers on every key frame (issue 36 row "slices, intra refresh, AUD, headers on every key frame"):
vtenc stream-format=avc3 keeps avc's length-prefixed access units and avcC but also puts the
SPS/PPS in band before every IDR picture (ISO/IEC 14496-15 avc3, what mp4mux writes as an avc3
sample entry), as byte-stream does in Annex B; plain avc keeps them in the avcC only. vtenc_h265's
hev1 and byte-stream do the same with VPS/SPS/PPS before every IRAP picture. Counted by FFmpeg's
trace_headers, which prints the extradata's set once first (an MP4's codec data, or for Annex B
the first key frame's sets, extracted), decoded by avdec and vtdec."""
import pytest

from encoder_controls_testing import encode_stream, trace_headers
from swiftvt_testing import run

FRAMES, PERIOD = 100, 25
KEY_FRAMES = FRAMES // PERIOD


def encode(runner, work, encoder, codec, stream_format, container):
    path = work / f"headers-{encoder}-{stream_format}.{'mp4' if container else codec}"
    muxer = f"{'h265parse ! ' if codec == 'h265' else ''}mp4mux" if container else ""
    return encode_stream(runner, path, f"videotestsrc num-buffers={FRAMES} ! video/x-raw,width=320,height=240,"
                         "framerate=25/1", f"{encoder} max-keyframe-interval={PERIOD}", codec, stream_format, muxer)


def sequence_parameter_sets(env, path):
    return trace_headers(env, path).count("Sequence Parameter Set")


@pytest.mark.parametrize("encoder, codec, stream_format, container, expected", [
    ("vtenc", "h264", "avc3", True, 1 + KEY_FRAMES),
    ("vtenc", "h264", "avc", True, 1),
    ("vtenc", "h264", "byte-stream", False, 1 + KEY_FRAMES),
    ("vtenc_h265", "h265", "hev1", True, 1 + KEY_FRAMES),
    ("vtenc_h265", "h265", "byte-stream", False, 1 + KEY_FRAMES),
])
def test_parameter_sets_before_every_key_frame(runner, work, controls_env, encoder, codec, stream_format, container,
                                               expected):
    path = encode(runner, work, encoder, codec, stream_format, container)
    assert sequence_parameter_sets(controls_env, path) == expected
    if container:
        tag = run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_tag_string", "-of", "csv=p=0", path],
                  controls_env).strip()
        assert tag == {"avc3": "avc3", "avc": "avc1", "hev1": "hev1"}[stream_format]
        # avdec takes no avc3/hev1 caps: h264parse/h265parse in front of it; vtdec takes them.
        for decoder in (f"{codec}parse ! avdec_{codec}", "vtdec"):
            runner.eos(f"filesrc location={path} ! qtdemux ! {decoder} ! fakesink", timeout=120)
