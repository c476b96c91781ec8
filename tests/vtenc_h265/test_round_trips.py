"""vtenc_h265 round trips (issue 37 item 2): videotestsrc and the corpus's 720p clip through
vtenc_h265 into mp4mux; ffprobe reads HEVC in an hvc1 sample entry at the input's size, Main
profile; the file decodes with avdec_h265 and with vtdec to the same pictures, at least 38 dB
PSNR-Y against the source (35 dB for the camera clip); active-backend says x265."""
from pathlib import Path

import pytest

from encoder_formats_testing import visible_md5
from parity_testing import stream_fields
from vtenc_h265_testing import raw_psnr_y, visible_psnr_y


@pytest.fixture(scope="module")
def ball(runner, work):
    """60 frames of 320x240 videotestsrc: the raw source, vtenc_h265 in MP4, and the MP4 decoded by
    avdec_h265 and by vtdec (raw I420)."""
    name = work / "ball"
    result = runner.eos(
        "videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! "
        f"tee name=s s. ! queue ! filesink location={name}.yuv s. ! queue ! vtenc_h265 name=enc ! mp4mux ! "
        f"filesink location={name}.mp4", timeout=120, properties=("active-backend",))
    for decoder in ("avdec_h265", "vtdec"):
        runner.eos(f"filesrc location={name}.mp4 ! qtdemux ! h265parse ! {decoder} ! video/x-raw,format=I420 ! "
                   f"filesink location={name}.{decoder}.yuv", timeout=120)
    return name, result


def test_mp4_holds_hevc_in_hvc1_at_the_input_size_main_profile(ball, h265_env):
    name, _ = ball
    fields = stream_fields(h265_env, f"{name}.mp4", "codec_name,codec_tag_string,profile,width,height,pix_fmt,"
                           "nb_read_frames")
    assert fields == "hevc,Main,hvc1,320,240,yuv420p,60", fields


def test_active_backend_is_x265(ball):
    _, result = ball
    assert result.property("enc", "active-backend") == "x265 (software)"


@pytest.mark.parametrize("decoder", ["avdec_h265", "vtdec"])
def test_decodes_with_psnr_y_at_least_38_db(ball, h265_env, decoder):
    name, _ = ball
    psnr = raw_psnr_y(h265_env, f"{name}.{decoder}.yuv", f"{name}.yuv", "yuv420p", "320x240")
    print(f"{decoder}: PSNR-Y {psnr:.2f} dB")
    assert psnr >= 38, psnr


def test_avdec_h265_and_vtdec_decode_the_same_pictures(ball):
    name, _ = ball
    avdec = visible_md5(f"{name}.avdec_h265.yuv", "I420", 320, 240)
    assert avdec != "missing" and visible_md5(f"{name}.vtdec.yuv", "I420", 320, 240) == avdec


def test_corpus_720p_clip_round_trip(runner, work, h265_env, hd_stream):
    name = work / "hd"
    # The raw branch's queue unbounded: its sink waits at preroll while x265 takes its look-ahead.
    runner.eos(f"filesrc location={hd_stream} ! h264parse ! avdec_h264 ! identity eos-after=30 ! "
               "video/x-raw,format=I420 ! tee name=s s. ! queue max-size-buffers=0 max-size-bytes=0 "
               f"max-size-time=0 ! filesink location={name}.yuv s. ! queue ! "
               f"vtenc_h265 ! mp4mux ! filesink location={name}.mp4", timeout=240)
    fields = stream_fields(h265_env, f"{name}.mp4", "codec_name,codec_tag_string,profile,width,height")
    assert fields == "hevc,Main,hvc1,1280,720", fields
    runner.eos(f"filesrc location={name}.mp4 ! qtdemux ! h265parse ! vtdec ! video/x-raw,format=I420 ! "
               f"filesink location={name}.vtdec.yuv", timeout=240)
    psnr = raw_psnr_y(h265_env, f"{name}.vtdec.yuv", f"{name}.yuv", "yuv420p", "1280x720")
    print(f"720p clip through vtdec: PSNR-Y {psnr:.2f} dB")
    assert psnr >= 35, psnr


@pytest.mark.parametrize("size", ["318x190", "64x64", "66x74"])
def test_sizes_off_the_block_grid_decode_at_their_size(runner, work, h265_env, size):
    """x265 codes whole coding blocks; the conformance window (H.265 7.4.3.2.1) crops to the size.
    Near-lossless (quality 0.9): a window off by a sample would show as a PSNR far below 40 dB,
    while at the default quality SMPTE bars in 64x64 are genuinely hard."""
    width, height = size.split("x")
    name = work / f"size-{size}"
    runner.eos(f"videotestsrc num-buffers=10 ! video/x-raw,format=I420,width={width},height={height} ! "
               f"tee name=s s. ! queue ! filesink location={name}.yuv s. ! queue ! "
               f"vtenc_h265 rate-control=quality quality=0.9 ! mp4mux ! filesink location={name}.mp4", timeout=120)
    assert stream_fields(h265_env, f"{name}.mp4", "width,height") == f"{width},{height}"
    runner.eos(f"filesrc location={name}.mp4 ! qtdemux ! h265parse ! avdec_h265 ! video/x-raw,format=I420 ! "
               f"filesink location={name}.avdec.yuv", timeout=120)
    psnr = visible_psnr_y(Path(f"{name}.avdec.yuv"), Path(f"{name}.yuv"), int(width), int(height))
    print(f"{size}: PSNR-Y {psnr:.2f} dB")
    assert psnr >= 40, psnr
