"""Closed captions (issue 36 row "captions", item 3): GstVideoCaptionMeta on vtenc's and vtenc_h265's
input frames (CEA-708 cc_data, CEA-608 in it, and the other layouts GStreamer carries) become ATSC
A/53 user data SEI (H.264 D.1.6, H.265 D.2.6) in the access unit of their picture, as x264enc
writes them; vtdec attaches them to its output pictures as GstVideoCaptionMeta (CEA708_RAW), as
avdec_h264 does; h264parse-to-avcc keeps the SEI. Round trips run with B-frames, so that a caption
travelling with the wrong picture would come out of order. The captions are read back by
GStreamer's own ccextractor (tests/lib/captions_tool.py), the stream by avdec_h264/avdec_h265 and
ffprobe, independently of SwiftVT. (VA-API: tests/vtenc_va/test_captions.py.)"""
import shutil
import subprocess

import pytest

from captions_testing import captions_in_presentation_order, expected as expected_for, write as write_frames
from encoder_controls_testing import field_values, trace_headers
from swiftvt_testing import require, run

FRAMES = 30


@pytest.fixture(scope="module")
def captions_env(controls_env):
    require(subprocess.run(["gst-inspect-1.0", "--exists", "ccextractor"], env=controls_env).returncode == 0,
            "captions: GStreamer's ccextractor (gstreamer1.0-plugins-bad), the reader of GstVideoCaptionMeta")
    require(shutil.which("ffprobe"), "captions: ffprobe")
    return controls_env


def write(env, kind, tail, frames=FRAMES):
    return write_frames(env, kind, tail, frames)


def expected(kind, frames=FRAMES):
    return expected_for(kind, frames)


ENCODERS = {"h264": ("vtenc b-frames=2", "h264parse", "avdec_h264"),
            "h265": ("vtenc_h265 b-frames=2", "h265parse", "avdec_h265")}


@pytest.fixture(scope="module", params=list(ENCODERS))
def encoded(request, captions_env, work):
    codec = request.param
    encoder = ENCODERS[codec][0]
    mp4, annex_b = work / f"captions-{codec}.mp4", work / f"captions-{codec}.{codec}"
    write(captions_env, "cea708-raw", f"{encoder} ! {ENCODERS[codec][1]} ! mp4mux ! filesink location={mp4}")
    write(captions_env, "cea708-raw",
          f"{encoder} ! video/x-{codec},stream-format=byte-stream ! filesink location={annex_b}")
    return codec, mp4, annex_b


def test_vtdec_gives_each_picture_its_captions(captions_env, encoded):
    codec, mp4, _ = encoded
    captions, frames = captions_in_presentation_order(captions_env, f"filesrc location={mp4} ! qtdemux ! vtdec")
    assert frames == FRAMES
    assert captions == expected("cea708-raw")


def test_the_peer_decoder_reads_the_same_captions(captions_env, encoded):
    codec, mp4, _ = encoded
    parser, peer = ENCODERS[codec][1:]
    captions, _ = captions_in_presentation_order(captions_env,
                                                 f"filesrc location={mp4} ! qtdemux ! {parser} ! {peer}")
    assert captions == expected("cea708-raw")


def test_ffprobe_reports_closed_captions(captions_env, encoded):
    codec, mp4, annex_b = encoded
    # ffprobe decodes HEVC pictures to probe an elementary stream, not an MP4 whose hvcC says
    # enough: it sees the captions of the Annex B file only.
    for path in (mp4, annex_b) if codec == "h264" else (annex_b,):
        banner = subprocess.run(["ffprobe", str(path)], env=captions_env, capture_output=True, text=True,
                                timeout=60).stderr
        assert "Closed Captions" in banner, banner


def test_captions_are_sei_in_decoding_order_with_their_picture(captions_env, encoded):
    """FFmpeg reads one user_data_registered_itu_t_t35 per access unit, and the packets (decoding
    order) are not in presentation order: with B-frames, the decoders' captions above come out in
    frame order only because each caption travelled in its own picture's access unit."""
    _, mp4, annex_b = encoded
    assert field_values(trace_headers(captions_env, annex_b), "itu_t_t35_country_code") == [0xB5] * FRAMES
    packets = run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts", "-of", "csv=p=0",
                   mp4], captions_env).split()
    decoding_order = [int(pts) for pts in packets]
    assert len(decoding_order) == FRAMES
    assert decoding_order != sorted(decoding_order), "B-frames expected: decoding order differs from presentation"


@pytest.mark.parametrize("kind", ["cea608-s334-1a", "cea708-cdp", "cea608-raw"])
def test_every_caption_layout_goes_in_as_cc_data(captions_env, work, kind):
    path = work / f"captions-{kind}.mp4"
    write(captions_env, kind, f"vtenc ! h264parse ! mp4mux ! filesink location={path}", frames=10)
    captions, _ = captions_in_presentation_order(captions_env, f"filesrc location={path} ! qtdemux ! vtdec")
    assert captions == expected(kind, 10)


def test_h264parse_to_avcc_keeps_the_sei(captions_env, work):
    path = work / "captions-avcc.h264"
    write(captions_env, "cea708-raw", f"vtenc b-frames=2 ! video/x-h264,stream-format=byte-stream ! "
          f"filesink location={path}", frames=10)
    captions, _ = captions_in_presentation_order(captions_env, f"filesrc location={path} ! h264parse-to-avcc ! vtdec")
    assert captions == expected("cea708-raw", 10)


def test_h265parse_to_hvcc_keeps_the_sei(captions_env, work):
    path = work / "captions-hvcc.h265"
    write(captions_env, "cea708-raw", f"vtenc_h265 ! video/x-h265,stream-format=byte-stream ! filesink location={path}",
          frames=10)
    captions, _ = captions_in_presentation_order(captions_env, f"filesrc location={path} ! h265parse-to-hvcc ! vtdec")
    assert captions == expected("cea708-raw", 10)


def test_captions_a_parser_extracted_come_out_once(captions_env, encoded):
    """h264parse/h265parse attach the captions they read to vtdec's input; the base class carries
    those to the output, and vtdec adds none of its own."""
    codec, _, annex_b = encoded
    captions, frames = captions_in_presentation_order(
        captions_env, f"filesrc location={annex_b} ! {ENCODERS[codec][1]} ! vtdec")
    assert frames == FRAMES
    assert captions == expected("cea708-raw")


def test_vtdec_reads_the_captions_x264enc_writes(captions_env, work):
    path = work / "captions-x264enc.mp4"
    write(captions_env, "cea708-raw", f"x264enc ! h264parse ! mp4mux ! filesink location={path}")
    ours, _ = captions_in_presentation_order(captions_env, f"filesrc location={path} ! qtdemux ! vtdec")
    theirs, _ = captions_in_presentation_order(captions_env, f"filesrc location={path} ! qtdemux ! avdec_h264")
    assert ours == theirs == expected("cea708-raw")


def test_frames_without_captions_get_no_sei(captions_env, work):
    path = work / "no-captions.h264"
    run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=10", "!", "video/x-raw,width=320,height=240", "!",
         "vtenc", "!", "video/x-h264,stream-format=byte-stream", "!", "filesink", f"location={path}"], captions_env)
    assert field_values(trace_headers(captions_env, path), "itu_t_t35_country_code") == []
