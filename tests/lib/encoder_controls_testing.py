"""Helpers of the encoder-controls suite (tests/encoder_controls/): reading coded streams back
with FFmpeg's trace_headers bitstream filter, independently of SwiftVT's own parsers."""
import re
import subprocess


def trace_headers(env, path):
    """FFmpeg's trace of every header syntax element of `path` (an Annex B .h264/.h265 or an MP4)."""
    completed = subprocess.run(["ffmpeg", "-nostdin", "-v", "trace", "-i", str(path), "-c", "copy", "-bsf:v",
                                "trace_headers", "-f", "null", "-"], env=env, capture_output=True, text=True,
                               errors="replace", timeout=300)
    return completed.stderr


def field_values(trace, field):
    """Every value the trace prints for the syntax element `field`, in stream order."""
    return [int(value) for value in re.findall(rf"\]\s+\d+\s+{field}\s.*?=\s*(-?\d+)\s*$", trace, re.MULTILINE)]


def slice_qps(env, path):
    """SliceQPY of every slice (H.264 7-30: 26 + pic_init_qp_minus26 + slice_qp_delta; H.265 7-54:
    26 + init_qp_minus26 + slice_qp_delta), for streams with one PPS."""
    trace = trace_headers(env, path)
    base = field_values(trace, "pic_init_qp_minus26") or field_values(trace, "init_qp_minus26")
    assert len(set(base)) == 1, f"one PPS QP expected, the trace has {base}"
    return [26 + base[0] + delta for delta in field_values(trace, "slice_qp_delta")]


def encode_stream(runner, path, source, encoder, codec, stream_format="byte-stream", muxer="", timeout=120):
    """`source ! encoder ! video/x-CODEC,stream-format=... [! muxer] ! filesink` to `path`, which must end
    by EOS (the bus-watching runner); returns `path`."""
    tail = f"{muxer} ! " if muxer else ""
    runner.eos(f"{source} ! {encoder} ! video/x-{codec},stream-format={stream_format} ! {tail}filesink location={path}",
               timeout=timeout)
    return path
