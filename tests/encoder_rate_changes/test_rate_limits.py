"""Issue 32 rows 5 and 6 on x264, beside x264enc (and issue 36: max-bitrate and vbv-buffer-size set
while PLAYING): data-rate-limits set while PLAYING when none was set at start: every one-second
window after the change holds the limit; a change that cannot be applied (bitrate=0 under rate-
control=cbr) is one WARNING saying why; data-rate-limits=125000,1 and rate-control=cbr bitrate=1000
from the start: every window of 30 consecutive frames (one second at 30 fps, in decode order) within
5 % of 125000 bytes. Frame sizes are the encoder's output buffers."""
import pytest

from rate_changes_testing import LIMIT, SMALL, encode, ended_by_eos, one_warning


def test_data_rate_limits_set_while_playing_hold_after_the_change(rate_env, src720):
    rates = ended_by_eos(encode(rate_env, src720, "vtenc name=enc hardware=disable",
                                [(150, f"data-rate-limits={LIMIT},1")])).measure(150)
    assert rates.max_window > LIMIT, f"the largest window before the change, {rates.max_window} B, is within the limit"
    assert 0 < rates.max_after <= LIMIT * 105 // 100, f"largest window after the change {rates.max_after} B"


@pytest.mark.parametrize("settings", [f"data-rate-limits={LIMIT},1", "rate-control=cbr bitrate=1000"],
                         ids=["data-rate-limits", "cbr"])
def test_every_one_second_window_holds_the_limit(rate_env, src720, settings):
    rates = ended_by_eos(encode(rate_env, src720, f"vtenc name=enc hardware=disable {settings}")).measure(300)
    assert rates.over == 0 and rates.max_window <= LIMIT * 105 // 100, \
        f"largest window {rates.max_window} B, {rates.over} of {rates.windows} windows over {LIMIT} + 5 %"


def test_x264enc_with_a_vbv_buffer_reaches_eos(rate_env, src720):
    """The peer, measured for the record (its windows are not checked: 122-130 KB, runs differ)."""
    rates = ended_by_eos(encode(rate_env, src720, "x264enc name=enc bitrate=1000 vbv-buf-capacity=500")).measure(300)
    print(f"x264enc bitrate=1000 vbv-buf-capacity=500: largest window {rates.max_window} B, "
          f"{rates.over} of {rates.windows} over, {rates.before} kbit/s")


def test_bitrate_0_under_cbr_while_playing_is_one_warning(rate_env):
    run = encode(rate_env, SMALL, "vtenc name=enc hardware=disable rate-control=cbr bitrate=500", [(30, "bitrate=0")])
    one_warning(ended_by_eos(run), "rate-control=cbr needs a bitrate.*goes on as it was")


def test_max_bitrate_and_vbv_buffer_set_while_playing_hold_after_the_change(rate_env, src720):
    """Issue 36: max-bitrate and vbv-buffer-size set while PLAYING (none at start) apply from the next
    frame: a buffer of B bits filled at R bit/s lets no one-second window hold more than R + B bits."""
    rates = ended_by_eos(encode(rate_env, src720, "vtenc name=enc hardware=disable",
                                [(150, "max-bitrate=800"), (150, "vbv-buffer-size=200")])).measure(150)
    bound = (800_000 + 200_000) // 8
    assert rates.max_window > bound, f"the largest window before the change, {rates.max_window} B, is within {bound}"
    assert 0 < rates.max_after <= bound, f"largest window after the change {rates.max_after} B, bound {bound} B"
