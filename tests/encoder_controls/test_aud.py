"""Access unit delimiters (issue 36 row "AUD"): vtenc's aud (x264enc's aud), on by default, puts an
access unit delimiter (H.264 7.3.2.4, NAL unit type 9) first in every access unit of both stream
formats; aud=false leaves them out. Counted by FFmpeg's trace_headers against the pictures."""
import pytest

from encoder_controls_testing import trace_headers

SOURCE = "videotestsrc num-buffers=20 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"


@pytest.mark.parametrize("stream_format, mux", [("byte-stream", ""), ("avc", "! mp4mux ")])
@pytest.mark.parametrize("aud, per_picture", [(None, 1), ("true", 1), ("false", 0)])
def test_one_delimiter_per_access_unit_or_none(runner, work, controls_env, stream_format, mux, aud, per_picture):
    path = work / f"aud-{stream_format}-{aud}.{'h264' if not mux else 'mp4'}"
    setting = f"aud={aud}" if aud else ""
    runner.eos(f"{SOURCE} ! vtenc {setting} ! video/x-h264,stream-format={stream_format} {mux}! "
               f"filesink location={path}", timeout=120)
    trace = [line for line in trace_headers(controls_env, path).splitlines() if "[trace_headers" in line]
    delimiters = sum("nal_unit_type: 9(AUD)" in line for line in trace)
    pictures = sum("nal_unit_type: 5(IDR)" in line or "nal_unit_type: 1(" in line for line in trace)
    assert pictures == 20 and delimiters == 20 * per_picture, (pictures, delimiters)
