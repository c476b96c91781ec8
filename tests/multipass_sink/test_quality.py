"""vtmultipasssink through gst-launch-1.0 as users run it, from a seekable source (was
tests/multipass-sink.sh 1 and 2): the 300-frame 720p clip at 1000 kbit/s. The MP4 passes ffprobe,
avdec_h264 decodes 300 frames at i/30 s (at the time stamps it gives for x264enc ! mp4mux's file of
the same source: qtdemux starts both at the edit list's B-frame delay), the bit rate is within 1 %
of the target, more than one pass ran; PSNR-Y against the source at least x264enc single-pass
ABR's at the same achieved size (its bitrate property tuned until its size is within 1 % of ours)
plus 0.2 dB. The run is made once (module fixture) and asserted on by each test.
"""
import pytest

from multipass_sink_testing import decoded_pts, kbps, launch, launch_multipass, psnr_y, source
from swiftvt_testing import run


@pytest.fixture(scope="module")
def multipass(sink_env, clip, tmp_path_factory):
    return launch_multipass(sink_env, clip, tmp_path_factory.mktemp("quality") / "multipass.mp4")


@pytest.fixture(scope="module")
def written(multipass):
    return multipass.written()


def test_pipeline_succeeds(multipass):
    assert multipass.status == 0, multipass.log[-3000:]


def test_ends_by_eos(multipass):
    assert "Got EOS" in multipass.log


def test_runs_a_second_pass(multipass):
    assert "Progress: (pass-2)" in multipass.log, "no pass-2 progress message"


def test_posts_the_done_message(multipass):
    assert "vtmultipasssink-done" in multipass.log


def test_ffprobe_sees_h264_720p_300_frames(sink_env, written):
    assert run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries",
                "stream=codec_name,width,height,nb_frames",
                "-of", "csv=p=0", written], sink_env).strip() == "h264,1280,720,300"


def test_bit_rate_within_1_percent(sink_env, written):
    assert 990 <= kbps(sink_env, written) <= 1010


@pytest.fixture(scope="module")
def pts(sink_env, written):
    return decoded_pts(sink_env, written)


def test_avdec_h264_decodes_300_frames(pts):
    assert len(pts) == 300


def test_decoded_frames_are_i_over_30_s_apart(pts):
    off = [(i, t) for i, t in enumerate(pts) if ((t - pts[0]) * 30 - i) ** 2 > 0.0001]
    assert off == [], f"frames out of place (index, s): {off[:10]}"


def test_decoded_time_stamps_are_x264enc_mp4muxs(sink_env, clip, pts, tmp_path):
    reference = tmp_path / "x264-reference.mp4"
    launch(sink_env, *source(clip), "!", "x264enc", "bitrate=1000", "!", "mp4mux", "!", "filesink",
           f"location={reference}", messages=False, extra=["-q"])
    assert pts == decoded_pts(sink_env, reference)


@pytest.fixture(scope="module")
def x264_at_our_size(sink_env, clip, written, tmp_path_factory):
    """x264enc single-pass ABR whose size is within 1 % of ours (up to 5 tries): (its file, its kbit/s)."""
    rate = kbps(sink_env, written)
    setting = int(rate)
    output = tmp_path_factory.mktemp("x264") / "x264.mp4"
    for _ in range(5):
        launch(sink_env, *source(clip), "!", "x264enc", f"bitrate={setting}", "!", "mp4mux", "!", "filesink",
               f"location={output}", messages=False, extra=["-q"])
        x264_rate = kbps(sink_env, output)
        if (x264_rate - rate) ** 2 <= (rate * 0.01) ** 2:
            break
        setting = int(setting * rate / x264_rate + 0.5)
    return output, x264_rate


def test_x264enc_size_can_be_matched(sink_env, written, x264_at_our_size):
    rate = kbps(sink_env, written)
    assert abs(x264_at_our_size[1] - rate) <= rate * 0.01


def test_psnr_y_beats_x264enc_single_pass_by_0_2_db(sink_env, clip, written, x264_at_our_size):
    ours, theirs = psnr_y(sink_env, written, clip), psnr_y(sink_env, x264_at_our_size[0], clip)
    assert ours >= theirs + 0.2, f"PSNR-Y {ours:.3f} is not 0.2 dB above x264enc's {theirs:.3f}"
