"""Access unit delimiters (issue 36 row "AUD"): vtenc's aud (x264enc's aud), on by default, puts an
access unit delimiter (H.264 7.3.2.4, NAL unit type 9) first in every access unit of both stream
formats; aud=false leaves them out. vtenc_h265's aud, off by default as x265enc writes none, puts
the H.265 one (7.3.2.5, type 35) first in every access unit of hvc1, hev1 and byte-stream, before
the parameter sets, with pic_type 0 on the IRAP picture and the access unit's TemporalId. Counted
by FFmpeg's trace_headers against the pictures; the streams decode without complaint."""
import subprocess

import pytest

from encoder_controls_testing import encode_stream, field_values, trace_headers

SOURCE = "videotestsrc num-buffers=20 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"


def trace_lines(env, path):
    return [line for line in trace_headers(env, path).splitlines() if "[trace_headers" in line]


@pytest.mark.parametrize("stream_format, mux", [("byte-stream", ""), ("avc", "mp4mux")])
@pytest.mark.parametrize("aud, per_picture", [(None, 1), ("true", 1), ("false", 0)])
def test_one_delimiter_per_access_unit_or_none(runner, work, controls_env, stream_format, mux, aud, per_picture):
    path = work / f"aud-{stream_format}-{aud}.{'h264' if not mux else 'mp4'}"
    setting = f"aud={aud}" if aud else ""
    trace = trace_lines(controls_env, encode_stream(runner, path, SOURCE, f"vtenc {setting}", "h264", stream_format,
                                                    mux))
    delimiters = sum("nal_unit_type: 9(AUD)" in line for line in trace)
    pictures = sum("nal_unit_type: 5(IDR)" in line or "nal_unit_type: 1(" in line for line in trace)
    assert pictures == 20 and delimiters == 20 * per_picture, (pictures, delimiters)


@pytest.mark.parametrize("stream_format, mux", [("byte-stream", ""), ("hvc1", "h265parse ! mp4mux"),
                                                ("hev1", "h265parse ! mp4mux")])
@pytest.mark.parametrize("aud, per_picture", [(None, 0), ("true", 1), ("false", 0)])
def test_hevc_delimiters_when_asked(runner, work, controls_env, stream_format, mux, aud, per_picture):
    path = work / f"aud-h265-{stream_format}-{aud}.{'h265' if not mux else 'mp4'}"
    setting = f"aud={aud}" if aud else ""
    path = encode_stream(runner, path, SOURCE, f"vtenc_h265 b-frames=2 {setting}", "h265", stream_format, mux)
    trace = trace_lines(controls_env, path)
    delimiters = sum("nal_unit_type: 35(AUD)" in line for line in trace)
    pictures = sum(any(f"nal_unit_type: {t}(" in line for t in range(0, 22)) for line in trace)
    assert pictures == 20 and delimiters == 20 * per_picture, (pictures, delimiters)
    if per_picture:
        # The IDR picture's delimiter says I slices only, the others B, P or I.
        assert sorted(field_values("\n".join(trace), "pic_type")) == [0] + [2] * 19
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "null", "-"], env=controls_env,
                             capture_output=True, text=True, timeout=120)
    assert decoded.returncode == 0 and decoded.stderr.strip() == "", decoded.stderr
