"""Issue 32 rows 10, 11 and 13: empty input (/dev/null) through h264parse-to-avcc ! vtdec: a clean
EOS, as h264parse; one-picture streams concatenated (the same IDR and idr_pic_id after SPS/PPS: a
320x240 picture and a 1920x1080 picture of 8160 one-macroblock slices, 5 copies each): 5 frames with
avdec_h264's pictures through h264parse-to-avcc ! vtdec, as through h264parse; a capsfilter switched
from I420 to NV12 after 60 frames (RECONFIGURE while playing): vtdec (software and VA) delivers NV12
from the same frame as avdec_h264 ! videoconvert, with the same pictures (reconfigure_format.py)."""
import hashlib
import itertools
import subprocess

import pytest

from swiftvt_testing import run


@pytest.mark.parametrize("parser", ["h264parse-to-avcc", "h264parse"])
def test_row10_empty_input_is_a_clean_eos(pipeline, parser):
    result = pipeline.eos(f"filesrc location=/dev/null ! {parser} ! vtdec ! fakesink", timeout=30)
    assert (result.errors, result.warnings, result.ended_by) == ([], [], "eos")


def raw_md5(env, *description):
    out = subprocess.run(["gst-launch-1.0", "-q", *description, "!", "fdsink"], env=env,
                         capture_output=True, timeout=300).stdout
    return hashlib.md5(out).hexdigest(), len(out)


@pytest.mark.parametrize("one, source, encoder, frame_bytes", [
    ("one", "videotestsrc num-buffers=1 pattern=ball ! video/x-raw,format=I420,width=320,height=240", "x264enc",
     320 * 240 * 3 // 2),
    ("slices", "videotestsrc num-buffers=1 ! video/x-raw,format=I420,width=1920,height=1080",
     "x264enc option-string=slice-max-mbs=1", 1920 * 1080 * 3 // 2),
], ids=["320x240", "1080p-8160-slices"])
def test_row11_one_picture_streams_concatenated(decoding_env, tmp_path, one, source, encoder, frame_bytes):
    single, five = tmp_path / f"{one}.264", tmp_path / f"{one}x5.264"
    run(["gst-launch-1.0", "-q", *source.split(), "!", *encoder.split(), "!", "video/x-h264,stream-format=byte-stream",
         "!", "filesink", f"location={single}"], decoding_env, timeout=300)
    five.write_bytes(single.read_bytes() * 5)
    peer, _ = raw_md5(decoding_env, "filesrc", f"location={five}", "!", "h264parse", "!", "avdec_h264")
    ours, size = raw_md5(decoding_env, "filesrc", f"location={five}", "!", "h264parse-to-avcc", "!",
                         "vtdec", "hardware=disable")
    assert (size // frame_bytes, ours) == (5, peer), "h264parse ! avdec_h264: 5 frames"


def formats(lines):
    """`3x I420 2x NV12` of reconfigure_format.py's lines (PTS FORMAT MD5), run by run."""
    return " ".join(f"{len(list(group))}x{name}"
                    for name, group in itertools.groupby(line.split()[1] for line in lines))


@pytest.fixture(scope="module")
def peer_frames(helper, decoding_env, src720):
    return helper("reconfigure_format", src720, "avdec_h264 ! videoconvert", env=decoding_env)


@pytest.mark.parametrize("decoder", ["vtdec hardware=disable", "vtdec_hw"])
def test_row13_nv12_from_the_same_frame_with_the_same_pictures(helper, decoding_env, request,
                                                               src720, peer_frames, decoder):
    env = request.getfixturevalue("va_env") if decoder == "vtdec_hw" else decoding_env
    ours = helper("reconfigure_format", src720, decoder, env=env)
    assert formats(ours).endswith("xNV12") and formats(ours) == formats(peer_frames), \
        f"formats {formats(ours)}, avdec_h264 ! videoconvert {formats(peer_frames)}"
    assert ours == peer_frames, "the pictures differ from avdec_h264 ! videoconvert's"
