"""A property value whose arithmetic does not fit 64 bits: data-rate-limits of 2^63 - 1 bytes per
second is refused with one ERROR naming the property, never a trap."""
from parity_testing import assert_one_swiftvt_error, error_kind


def test_data_rate_limits_beyond_64_bits_is_one_error(runner):
    result = runner.error("videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 "
                          '! vtenc name=enc data-rate-limits="9223372036854775807,1" ! fakesink')
    error = assert_one_swiftvt_error(result, "data-rate-limits.*out of range")
    assert error_kind(error) == ("enc", "library/settings")
