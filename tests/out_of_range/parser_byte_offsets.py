#!/usr/bin/env python3
"""Feeds an H.264 byte stream to h264parse-to-avcc from an appsrc whose buffers carry byte offsets
near the top of the 64-bit range (GstBaseParse hands upstream's offsets to the element in each
frame, GST_BUFFER_OFFSET_NONE included). Prints what happened as JSON for
tests/out_of_range/test_oor_byte_offsets.py to assert on: {"base": the first offset, "ended":
"eos", "error" or "timeout", "access_units": how many came out}.

    parser_byte_offsets.py STREAM.h264"""
import json
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def main(path):
    Gst.init(None)
    data = open(path, "rb").read()
    pipeline = Gst.parse_launch(
        "appsrc name=src format=bytes caps=video/x-h264,stream-format=byte-stream ! "
        "h264parse-to-avcc ! fakesink name=sink")
    source = pipeline.get_by_name("src")
    units = 0

    def count(_pad, _info):
        nonlocal units
        units += 1
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("sink").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, count)
    pipeline.set_state(Gst.State.PLAYING)
    chunk = 4096
    # The last byte of the stream lies at the largest offset a guint64 holds.
    base = 2**64 - len(data) - 1
    for start in range(0, len(data), chunk):
        buffer = Gst.Buffer.new_wrapped(data[start:start + chunk])
        buffer.offset = base + start
        if start == 0:
            buffer.set_flags(Gst.BufferFlags.DISCONT)
        source.emit("push-buffer", buffer)
    source.emit("end-of-stream")
    message = pipeline.get_bus().timed_pop_filtered(60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    ended = "timeout" if message is None else "eos" if message.type == Gst.MessageType.EOS else "error"
    print(json.dumps({"base": base, "ended": ended, "access_units": units}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
