#!/usr/bin/env python3
"""A small GStreamer application in Python (GI): plays an MP4 with playbin and checks that the
decoder it chose is vtdec and that every frame arrived. Run by tests/vtdec-in-apps.sh with
GST_PLUGIN_FEATURE_RANK=vtdec:MAX."""
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
    if message is None or message.type != Gst.MessageType.EOS:
        print("python playbin: did not reach EOS:", message.parse_error() if message else "timeout", file=sys.stderr)
        return 1
    if "vtdec" not in factories:
        print("python playbin: vtdec was not chosen; elements:", factories, file=sys.stderr)
        return 1
    if frames != 60:
        print(f"python playbin: {frames} frames reached the sink, expected 60", file=sys.stderr)
        return 1
    print(f"python playbin: vtdec decoded {frames} frames to the end")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
