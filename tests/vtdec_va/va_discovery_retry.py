#!/usr/bin/env python3
"""A failed VA device discovery is not remembered: an application whose first session found no
usable device (here: the software VA driver told to offer no H.264, SWIFTVT_VA_NO_H264=any, which
the driver reads at each vaInitialize) gets the device in its next session once it is usable, in
the same process and with the same elements (READY, then PLAYING again), as it would after a
driver was installed or a permission fixed.

    va_discovery_retry.py STREAM.h264

Run by tests/vtdec_va/test_discovery_retry.py on the software VA driver. For vtdec and vtenc (hardware=auto),
checks `active-backend`: libavcodec / x264 in the first run, VA-API in the second, each to EOS."""
import os
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def run_to_eos(pipeline, what):
    pipeline.set_state(Gst.State.PLAYING)
    message = pipeline.get_bus().timed_pop_filtered(120 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    # READY, not NULL: the elements (and whatever they keep between sessions) stay.
    pipeline.set_state(Gst.State.READY)
    if message is None or message.type != Gst.MessageType.EOS:
        detail = message.parse_error()[0].message if message else "timed out"
        raise RuntimeError(f"{what}: did not reach EOS: {detail}")


def check(name, description, element_name, stream):
    pipeline = Gst.parse_launch(description.format(stream=stream))
    element = pipeline.get_by_name(element_name)
    os.environ["SWIFTVT_VA_NO_H264"] = "any"
    run_to_eos(pipeline, f"{name}, first run (no device with H.264)")
    first = element.get_property("active-backend")
    del os.environ["SWIFTVT_VA_NO_H264"]
    run_to_eos(pipeline, f"{name}, second run (the device offers H.264 again)")
    second = element.get_property("active-backend")
    pipeline.set_state(Gst.State.NULL)
    ok = "software" in first and "VA-API" in second
    print(f"{name}: first session {first!r}, second session {second!r}: {'ok' if ok else 'FAIL'}")
    return ok


def main(stream):
    Gst.init(None)
    results = [
        check("vtdec", "filesrc location={stream} ! h264parse-to-avcc ! vtdec name=e hardware=auto ! fakesink",
              "e", stream),
    ]
    # The nvdec personality is a decode-only device (nvidia-vaapi-driver): no encoder to find.
    if os.environ.get("SWIFTVT_VA_PERSONALITY") != "nvdec":
        results.append(check("vtenc", "videotestsrc num-buffers=10 ! video/x-raw,width=176,height=144,format=I420 "
                             "! vtenc name=e hardware=auto ! fakesink", "e", stream))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
