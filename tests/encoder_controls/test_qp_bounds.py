"""QP bounds (issue 36 row "QP bounds"): min-allowed-frame-qp and max-allowed-frame-qp (VideoToolbox's
MinAllowedFrameQP/MaxAllowedFrameQP; x264enc qp-min/qp-max) reach the stream: every slice QP, read
back by FFmpeg's trace_headers, lies within them, for vtenc (x264), vtenc_h265 (x265) and
vtmultipasssink, where the unbounded encode goes outside (a starved bit rate wants QPs near 51,
near-lossless quality QPs near 0); x264enc with qp-max in the same pipeline for comparison. Bounds
that contradict each other are one ERROR naming the property. (VA-API: min_qp/max_qp and constant-QP
clamping in tests/vtenc_va/test_rate_parameters.py.)"""
import pytest

from encoder_controls_testing import encode_stream, slice_qps
from parity_testing import assert_one_swiftvt_error

SOURCE = "videotestsrc num-buffers=30 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"
STARVED = {"vtenc": "vtenc bitrate=8", "vtenc_h265": "vtenc_h265 bitrate=8", "x264enc": "x264enc bitrate=8"}
FINE = {"vtenc": "vtenc rate-control=quality quality=0.97",
        "vtenc_h265": "vtenc_h265 rate-control=quality quality=0.95"}
CAP = {"vtenc": "max-allowed-frame-qp=30", "vtenc_h265": "max-allowed-frame-qp=30", "x264enc": "qp-max=30"}


def encode(runner, work, name, encoder, *properties, codec="h264"):
    return encode_stream(runner, work / f"{name}.{codec}", SOURCE, f"{encoder} {' '.join(properties)}", codec)


@pytest.mark.parametrize("element", ["vtenc", "vtenc_h265", "x264enc"])
def test_max_holds_every_slice_qp_at_a_starved_rate(runner, work, controls_env, element):
    codec = "h265" if element == "vtenc_h265" else "h264"
    free = slice_qps(controls_env, encode(runner, work, f"starved-{element}", STARVED[element], codec=codec))
    capped = slice_qps(controls_env, encode(runner, work, f"capped-{element}", STARVED[element], CAP[element],
                                            codec=codec))
    assert max(free) > 30, f"unbounded, the starved rate stays at or under 30: {free}"
    assert len(capped) >= 30 and max(capped) <= 30, capped


@pytest.mark.parametrize("element", ["vtenc", "vtenc_h265"])
def test_min_holds_every_slice_qp_at_fine_quality(runner, work, controls_env, element):
    codec = "h265" if element == "vtenc_h265" else "h264"
    free = slice_qps(controls_env, encode(runner, work, f"fine-{element}", FINE[element], codec=codec))
    floored = slice_qps(controls_env, encode(runner, work, f"floored-{element}", FINE[element],
                                             "min-allowed-frame-qp=28", codec=codec))
    assert min(free) < 28, f"unbounded, fine quality stays at or over 28: {free}"
    assert len(floored) >= 30 and min(floored) >= 28, floored


def test_multipass_sink_keeps_its_passes_within_the_bounds(runner, work, controls_env):
    """The passes' forced QPs are bounded too: a target out of reach below the cap ends at the cap."""
    path = work / "multipass.h264"
    runner.eos(f"{SOURCE} ! vtmultipasssink location={path} bitrate=8 max-allowed-frame-qp=30", timeout=120)
    qps = slice_qps(controls_env, path)
    assert len(qps) >= 30 and max(qps) <= 30, qps


@pytest.mark.parametrize("element", ["vtenc", "vtmultipasssink location=/tmp/never-written.mp4"])
def test_minimum_above_maximum_is_one_error(runner, element):
    result = runner.error(f"{SOURCE} ! {element} name=enc min-allowed-frame-qp=40 max-allowed-frame-qp=30")
    assert_one_swiftvt_error(result, r"^enc: .*min-allowed-frame-qp.*the minimum QP 40 is above the maximum QP 30")
