#!/usr/bin/env python3
"""Pushes raw I420 frames without time stamps (no PTS, DTS or duration) from appsrc into an
encoder, as an application that only has pictures would, and prints what happened as JSON:
{"encoder", "frames_in", "frames_out", "bytes", "errors": [texts], "ended": "eos", "error" or
"timeout"}. The output is written as a byte-stream to OUTPUT for a decoder to check.

    parity_untimed.py ENCODER OUTPUT [FRAMES] [TIMEOUT]

Run by tests/parity/test_parity_encoder.py (issue 16, row 2) for vtenc and for x264enc, its peer, and
by tests/vtenc_h265/test_parity.py for vtenc_h265 and x265enc (an encoder whose name holds 265 writes
video/x-h265)."""
import json
import sys
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

WIDTH, HEIGHT = 320, 240


def frame_bytes(index: int) -> bytes:
    """A moving ramp, so the encoder has motion to code and every frame differs."""
    luma = bytes(((x + y + 4 * index) & 0xFF) for y in range(HEIGHT) for x in range(WIDTH))
    chroma = bytes([128]) * (WIDTH * HEIGHT // 4)
    return luma + chroma + chroma


def main(encoder: str, output: str, count: int, timeout: float) -> int:
    Gst.init(None)
    pipeline = Gst.parse_launch(
        f"appsrc name=src format=bytes caps=video/x-raw,format=I420,width={WIDTH},height={HEIGHT},framerate=30/1 "
        f"! {encoder} ! video/x-{'h265' if '265' in encoder else 'h264'},stream-format=byte-stream "
        "! identity name=counter "
        f"! filesink location=\"{output}\"")
    source = pipeline.get_by_name("src")
    frames_out = 0
    size = 0

    def on_handoff(_identity, buffer):
        nonlocal frames_out, size
        frames_out += 1
        size += buffer.get_size()

    pipeline.get_by_name("counter").connect("handoff", on_handoff)
    pipeline.set_state(Gst.State.PLAYING)
    for index in range(count):
        buffer = Gst.Buffer.new_wrapped(frame_bytes(index))
        # No time stamps at all: what the test is about.
        buffer.pts = Gst.CLOCK_TIME_NONE
        buffer.dts = Gst.CLOCK_TIME_NONE
        buffer.duration = Gst.CLOCK_TIME_NONE
        if source.emit("push-buffer", buffer) != Gst.FlowReturn.OK:
            break
    source.emit("end-of-stream")

    bus = pipeline.get_bus()
    errors = []
    ended = "timeout"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = bus.timed_pop_filtered(
            int(0.2 * Gst.SECOND), Gst.MessageType.ERROR | Gst.MessageType.EOS)
        if message is None:
            continue
        if message.type == Gst.MessageType.ERROR:
            error, _debug = message.parse_error()
            errors.append(error.message)
            ended = "error"
            break
        ended = "eos"
        break
    pipeline.set_state(Gst.State.NULL)
    print(json.dumps({"encoder": encoder.split()[0], "frames_in": count, "frames_out": frames_out, "bytes": size,
                      "errors": errors, "ended": ended}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 30,
                  float(sys.argv[4]) if len(sys.argv) > 4 else 60))
