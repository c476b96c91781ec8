"""Time stamps at the end of their range (Swift traps on integer overflow, so each of these crashed
an element before it used saturating or checked arithmetic): within a frame of 2^63 ns through
vtmultipasssink (.mp4 and .h264), vtenc ! vtdec and h264parse-to-avcc ! vtdec: EOS, every frame in
the file; beyond 2^63 ns into vtenc: one ERROR that says the time stamps are out of range."""
import pytest

from parity_testing import assert_one_swiftvt_error, error_kind, decoded_frames

# 2^63 - 1 ns minus 310 ms: frame 9 of 10 at 30 frames/s ends past 2^63 - 1 ns.
NEAR_END = 9223372036544775807
RAW = "video/x-raw,format=I420,width=320,height=240,framerate=30/1"
SOURCE_NEAR_END = f"videotestsrc num-buffers=10 timestamp-offset={NEAR_END} ! {RAW}"


@pytest.fixture(scope="module", params=["mp4", "h264"])
def multipass(request, runner, work):
    """vtmultipasssink into .mp4 or .h264 from time stamps at 2^63 ns: (extension, run, file)."""
    output = work / f"near-end.{request.param}"
    return request.param, runner(f"{SOURCE_NEAR_END} ! vtmultipasssink location={output}",
                                 timeout=120, expect="eos"), output


def test_vtmultipasssink_ends_by_eos(multipass):
    _, run, _ = multipass
    assert run.status == 0, f"ended by {run.ended_by}:\n{run.log[-2000:]}"


def test_vtmultipasssink_writes_every_frame(multipass, plugin_env):
    _, _, output = multipass
    frames = decoded_frames(plugin_env, output)
    assert frames == 10


def test_vtenc_to_vtdec_ends_by_eos(runner):
    runner.eos(f"{SOURCE_NEAR_END} ! vtenc ! vtdec ! fakesink", timeout=120)


def test_h264parse_to_avcc_to_vtdec_ends_by_eos(runner):
    runner.eos(f"{SOURCE_NEAR_END} ! x264enc ! video/x-h264,stream-format=byte-stream ! h264parse-to-avcc ! vtdec "
               "! fakesink", timeout=120)


def test_vtenc_beyond_2_63_ns_is_one_error(runner):
    result = runner.error(f"videotestsrc num-buffers=10 timestamp-offset=9223372036824775807 ! {RAW} ! "
                          "vtenc name=enc ! fakesink")
    error = assert_one_swiftvt_error(result, "time stamps upstream are out of range")
    assert error_kind(error) == ("enc", "stream/encode")
