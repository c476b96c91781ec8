"""Issue 32 rows 1 and 2: reverse playback (seek rate -1.0 over [2 s, 6 s)) of an MP4, and an
application keeping the last K = 4, 8, 32 samples: vtdec (software, and vtdec_hw on the software VA
driver) gives avdec_h264's frames, with the same pictures and time stamps, then EOS (held_frames.py's
line: frame count, first and last PTS, a checksum over every frame's PTS and pixels); zero copy
(a downstream with GstVideoMeta keeping references): every frame, each with GstVideoMeta; vtdec !
filesink, which keeps small buffers until it has 64 KiB to write: every frame reaches the file."""
import re

import pytest

from swiftvt_testing import run

DECODERS = ["vtdec hardware=disable", "vtdec_hw"]


@pytest.fixture(scope="module")
def peer_line(helper, seek_mp4, decoding_env):
    lines = {}

    def line(mode, *args):
        if (mode, args) not in lines:
            out = helper("held_frames", mode, seek_mp4, "avdec_h264", *args, env=decoding_env)
            lines[mode, args] = out[-1] if out else ""
        return lines[mode, args]
    return line


def held(helper, seek_mp4, decoding_env, request, decoder, mode, *args):
    env = request.getfixturevalue("va_env") if decoder == "vtdec_hw" else decoding_env
    out = helper("held_frames", mode, seek_mp4, decoder, *args, env=env)
    return out[-1] if out else ""


@pytest.mark.parametrize("decoder", DECODERS)
def test_row1_reverse_playback_gives_avdec_h264s_frames(helper, seek_mp4, decoding_env, request, peer_line, decoder):
    ours = held(helper, seek_mp4, decoding_env, request, decoder, "reverse", 2, 6)
    assert ours.endswith("ended eos") and ours == peer_line("reverse", 2, 6), \
        f"{decoder}: {ours!r}; avdec_h264: {peer_line('reverse', 2, 6)!r}"


@pytest.mark.parametrize("keep", [4, 8, 32])
@pytest.mark.parametrize("decoder", DECODERS)
def test_row2_application_keeping_samples_gets_avdec_h264s_frames(helper, seek_mp4, decoding_env, request, peer_line,
                                                                  decoder, keep):
    ours = held(helper, seek_mp4, decoding_env, request, decoder, "hold", keep)
    assert ours.endswith("ended eos") and ours == peer_line("hold", keep), \
        f"{decoder}: {ours!r}; avdec_h264: {peer_line('hold', keep)!r}"


@pytest.mark.parametrize("keep", [8, 32])
def test_row2_zero_copy_downstream_keeping_pictures_gets_every_frame(helper, seek_mp4, decoding_env, keep):
    # The peer copies into its own pool, so its line differs only in the video-meta count: not compared.
    out = helper("held_frames", "hold-meta", seek_mp4, "vtdec hardware=disable", keep, env=decoding_env)
    line = out[-1] if out else ""
    assert re.fullmatch(r"frames 300 .*video_meta 300 ended eos", line), \
        f"{line!r}, wanted all 300 frames, each with GstVideoMeta"


def test_row2_filesink_keeping_small_buffers_gets_every_frame(decoding_env, pipeline, tmp_path):
    stream, raw = tmp_path / "small.264", tmp_path / "small.yuv"
    run(["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=30", "!",
         "video/x-raw,format=I420,width=64,height=48", "!",
         "x264enc", "!", "video/x-h264,stream-format=byte-stream", "!", "filesink", f"location={stream}"], decoding_env)
    pipeline.eos(f"filesrc location={stream} ! h264parse ! vtdec hardware=disable ! filesink location={raw}")
    size = raw.stat().st_size if raw.is_file() else 0
    assert size == 64 * 48 * 3 // 2 * 30, f"{size} bytes"
