#!/usr/bin/env python3
"""A small GStreamer application in Python (GI): plays an MP4 with playbin and prints what
happened as one JSON object: {"ended": "eos"|"error"|"timeout", "error", "factories": the
factories playbin set up, "frames": the frames that reached the sink}. Run by
tests/vtdec_in_apps/ with GST_PLUGIN_FEATURE_RANK=vtdec:MAX, which checks that the decoder was
vtdec and that every frame arrived."""
import json
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def main(path: str) -> int:
    Gst.init(None)
    factories = []
    frames = 0

    def element_setup(_playbin, element):
        factory = element.get_factory()
        if factory is not None:
            factories.append(factory.get_name())

    def handoff(_sink, _buffer, _pad):
        nonlocal frames
        frames += 1

    playbin = Gst.ElementFactory.make("playbin", None)
    sink = Gst.ElementFactory.make("fakesink", None)
    sink.set_property("signal-handoffs", True)
    sink.connect("handoff", handoff)
    playbin.set_property("video-sink", sink)
    playbin.set_property("audio-sink", Gst.ElementFactory.make("fakesink", None))
    playbin.set_property("uri", Gst.filename_to_uri(path))
    playbin.connect("element-setup", element_setup)
    playbin.set_state(Gst.State.PLAYING)
    message = playbin.get_bus().timed_pop_filtered(60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    playbin.set_state(Gst.State.NULL)
    ended = "timeout" if message is None else "eos" if message.type == Gst.MessageType.EOS else "error"
    print(json.dumps({"ended": ended, "error": str(message.parse_error()[0].message) if ended == "error" else None,
                      "factories": factories, "frames": frames}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
