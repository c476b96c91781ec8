"""CBR with a buffer, VBR with a peak (issue 36 row "VBV"): vtenc's and vtenc_h265's max-bitrate and
vbv-buffer-size (nvh264enc's names; x264enc vbv-buf-capacity, vah264enc cpb-size) reach the stream
as the VUI's HRD parameters (H.264 E.1.2, H.265 E.2.2: BitRate = (bit_rate_value_minus1 + 1) <<
(6 + bit_rate_scale), CpbSize = (cpb_size_value_minus1 + 1) << (4 + cpb_size_scale)), read by
FFmpeg's trace_headers, and the coded pictures fit that buffer: a leaky bucket filled at the peak
rate, emptied by each access unit in decoding order, never runs dry (Annex C.3's underflow), where
the same encode without a buffer does. Settings that contradict each other fail at the state change
with one ERROR naming them. (VA-API: tests/vtenc_va/test_rate_parameters.py.)"""
import pytest

from encoder_controls_testing import encode_stream, field_values, trace_headers
from swiftvt_testing import run, swiftvt_errors

RATE = 25
# A moving zone plate: detailed enough that x264's key frames at 400 kbit/s (about 280 kbit) outgrow
# a 200 kbit buffer when nothing holds them.
SOURCE = (f"videotestsrc pattern=zone-plate kx2=20 ky2=20 kt=1 num-buffers=150 ! video/x-raw,format=I420,width=640,"
          f"height=360,framerate={RATE}/1")


def encode(runner, work, name, encoder, codec, settings):
    return encode_stream(runner, work / f"vbv-{name}.{codec}", SOURCE, f"{encoder} max-keyframe-interval=25 {settings}",
                         codec, timeout=180)


def hrd(env, path):
    """(BitRate, CpbSize) of the first SchedSelIdx of the stream's first HRD parameters."""
    trace = trace_headers(env, path)
    rate_scale, size_scale = field_values(trace, "bit_rate_scale")[:1], field_values(trace, "cpb_size_scale")[:1]
    rates = field_values(trace, r"bit_rate_value_minus1\[0\]")
    sizes = field_values(trace, r"cpb_size_value_minus1\[0\]")
    assert rate_scale and size_scale and rates and sizes, "no hrd_parameters() in the VUI"
    return (rates[0] + 1) << (6 + rate_scale[0]), (sizes[0] + 1) << (4 + size_scale[0])


def access_unit_bits(env, path):
    """Each access unit's size in bits, in decoding order (the file's)."""
    sizes = run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=size", "-of", "csv=p=0",
                 path], env).split()
    return [int(size) * 8 for size in sizes]


def deepest_underflow(sizes, rate, buffer, initial=0.9):
    """How far (bits) the buffer went below empty at worst: filled at `rate` bits a second from
    `initial` of `buffer` (x264's and x265's default initial fullness), capped at `buffer`, each
    access unit removed whole at its time (C.3: it must be there entirely)."""
    fullness, deepest = buffer * initial, 0.0
    for size in sizes:
        fullness -= size
        deepest = min(deepest, fullness)
        fullness = min(buffer, fullness + rate / RATE)
    return -deepest


ENCODERS = [("vtenc", "h264"), ("vtenc_h265", "h265")]


@pytest.mark.parametrize("encoder, codec", ENCODERS)
def test_the_buffer_is_signalled_and_held(runner, work, controls_env, encoder, codec):
    peak, buffer = 600_000, 200_000
    path = encode(runner, work, f"{encoder}-vbr", encoder, codec, "bitrate=400 max-bitrate=600 vbv-buffer-size=200")
    signalled_rate, signalled_size = hrd(controls_env, path)
    assert abs(signalled_rate - peak) <= peak * 0.02, signalled_rate
    assert abs(signalled_size - buffer) <= buffer * 0.02, signalled_size
    sizes = access_unit_bits(controls_env, path)
    assert len(sizes) == 150
    # A few hundred bits of slack: the encoders' own accounting rounds to bytes and to their kbit.
    assert deepest_underflow(sizes, peak, buffer) <= 1000, deepest_underflow(sizes, peak, buffer)
    # The same encode without the buffer: nothing signalled, and its key frames overrun it.
    free = encode(runner, work, f"{encoder}-free", encoder, codec, "bitrate=400")
    assert field_values(trace_headers(controls_env, free), "bit_rate_scale") == []
    assert deepest_underflow(access_unit_bits(controls_env, free), peak, buffer) > 10_000


@pytest.mark.parametrize("encoder, codec", ENCODERS)
def test_cbr_with_a_buffer_codes_at_the_bit_rate(runner, work, controls_env, encoder, codec):
    path = encode(runner, work, f"{encoder}-cbr", encoder, codec, "rate-control=cbr bitrate=500 vbv-buffer-size=250")
    signalled_rate, signalled_size = hrd(controls_env, path)
    assert abs(signalled_rate - 500_000) <= 10_000 and abs(signalled_size - 250_000) <= 5_000
    sizes = access_unit_bits(controls_env, path)
    assert deepest_underflow(sizes, 500_000, 250_000) <= 1000
    assert sum(sizes) / (len(sizes) / RATE) <= 500_000 * 1.05


def test_capped_constant_quality(runner, work, controls_env):
    """x264's CRF with a VBV: quality decides, the buffer caps."""
    path = encode(runner, work, "capped-crf", "vtenc", "h264", "rate-control=quality quality=0.9 max-bitrate=500")
    signalled_rate, signalled_size = hrd(controls_env, path)
    assert abs(signalled_rate - 500_000) <= 10_000 and abs(signalled_size - 500_000) <= 10_000
    assert deepest_underflow(access_unit_bits(controls_env, path), 500_000, 500_000) <= 1000


@pytest.mark.parametrize("settings, words", [
    ("bitrate=800 max-bitrate=500", "max-bitrate 500 kbit/s is below bitrate 800 kbit/s"),
    ("rate-control=cqp max-bitrate=500", "not used with rate-control=cqp"),
    ("bitrate=500 max-bitrate=800 data-rate-limits=100000,1", "data-rate-limits and max-bitrate/vbv-buffer-size"),
    ("rate-control=quality vbv-buffer-size=300", "vbv-buffer-size needs the rate that fills the buffer"),
    ("rate-control=cbr bitrate=500 max-bitrate=800", "rate-control=cbr codes at bitrate"),
])
def test_contradictions_fail_at_the_caps_with_one_error(runner, controls_env, settings, words):
    result = runner.error(f"videotestsrc num-buffers=5 ! video/x-raw,width=320,height=240 ! vtenc {settings} "
                          "! fakesink", timeout=60)
    errors = swiftvt_errors(result)
    assert len(errors) == 1 and words in errors[0]["message"], [e["message"] for e in errors]
