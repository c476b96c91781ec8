"""Issue 32 row 4 on x264, beside x264enc: bitrate set while PLAYING on an encoder started at
bitrate=0 (CRF): the second half moves to the new rate (x264enc, 2048 -> 1000, moves too), and back
to bitrate=0 returns to CRF; the stream decodes whole with the new encoder's IDR picture at the
change; a restart right after the first IDR picture takes another idr_pic_id; quality set while
PLAYING under rate-control=quality moves the rate (issue 36); what cannot be applied while PLAYING
(bitrate under rate-control=quality, quality under abr, rate-control) is one WARNING."""
import pytest

from rate_changes_testing import SMALL, encode, ended_by_eos, ffmpeg_decode, idr_pic_ids, one_warning


@pytest.fixture(scope="module")
def to_abr(rate_env, src720, work):
    """vtenc bitrate 0 -> 1000 at frame 150 (CRF to ABR), written."""
    return encode(rate_env, src720, "vtenc name=enc hardware=disable", [(150, "bitrate=1000")], output=work / "r4.h264")


def test_bitrate_set_while_playing_moves_the_rate(to_abr):
    # x264 ABR over the 150 frames after the change (a new encoder, from an IDR picture) lands a
    # little under its target: 884 kbit/s measured; x264enc 938.
    rates = ended_by_eos(to_abr).measure(150)
    assert 750 <= rates.after <= 1150 and rates.before > 1400, f"{rates.before} -> {rates.after} kbit/s"


def test_bitrate_change_stream_decodes_whole(rate_env, to_abr, work):
    ended_by_eos(to_abr)
    errors, frames, keys = ffmpeg_decode(rate_env, work / "r4.h264")
    assert (errors, frames, keys) == ("", 300, [0, 150])


def test_x264enc_bitrate_set_while_playing_moves_too(rate_env, src720):
    rates = ended_by_eos(encode(rate_env, src720, "x264enc name=enc", [(150, "bitrate=1000")])).measure(150)
    assert 750 <= rates.after <= 1150, f"x264enc 2048 -> 1000: {rates.before} -> {rates.after} kbit/s"


def test_bitrate_back_to_0_returns_to_crf(rate_env, src720):
    rates = ended_by_eos(encode(rate_env, src720, "vtenc name=enc hardware=disable bitrate=1000",
                                [(150, "bitrate=0")])).measure(150)
    assert 750 <= rates.before <= 1150 and rates.after > 1400, f"{rates.before} -> {rates.after} kbit/s"


def test_restart_right_after_an_idr_picture_takes_another_idr_pic_id(rate_env, work):
    # x264 starts again at idr_pic_id 0, so the new IDR picture takes another id (7.4.3: two IDR
    # access units in a row must differ, or a decoder joins the second to the first).
    output = work / "r4-restart-idr.264"
    ended_by_eos(encode(rate_env, SMALL, "vtenc name=enc hardware=disable allow-frame-reordering=false",
                        [(1, "bitrate=500")], output=output))
    ids = idr_pic_ids(rate_env, output)[:2]
    _, frames, _ = ffmpeg_decode(rate_env, output)
    assert len(ids) == 2 and ids[0] != ids[1], f"idr_pic_ids {ids}"
    assert frames == 60


def test_quality_set_while_playing_moves_the_rate(rate_env, src720):
    """Issue 36: quality is a rate property too (x264's CRF changes at the next frame, as x264enc's
    quantizer and VA's constant QP do): 0.3 -> 0.8 at frame 150 costs several times the bits."""
    rates = ended_by_eos(encode(rate_env, src720, "vtenc name=enc hardware=disable rate-control=quality quality=0.3",
                                [(150, "quality=0.8")])).measure(150)
    assert rates.after > 3 * rates.before, f"{rates.before} -> {rates.after} kbit/s"


@pytest.mark.parametrize("encoder, change, warning", [
    ("rate-control=quality", "bitrate=500", "bitrate is not used with rate-control=quality"),
    ("bitrate=500", "quality=0.9", "quality is not used with rate-control=abr"),
    ("bitrate=500", "rate-control=quality", "rate-control changes only before the stream starts"),
], ids=["bitrate-under-quality", "quality-under-abr", "rate-control"])
def test_change_that_cannot_apply_while_playing_is_one_warning(rate_env, encoder, change, warning):
    one_warning(ended_by_eos(encode(rate_env, SMALL, f"vtenc name=enc hardware=disable {encoder}",
                                    [(30, change)])), warning)
