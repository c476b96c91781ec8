#!/usr/bin/env python3
"""Decodes one H.264 file through an autoplugging element, as an application would, and prints
one line: `APP decoder=FACTORY frames=N md5=HEX errors=N`. The MD5 is over the decoded pictures
as planar I420 (videoconvert after the decoder), which for a picture width that is a multiple of 8
is exactly the corpus manifest's avdec_md5. Exit 0 when the pipeline reached EOS, 1 otherwise.

    autoplug_decode.py playbin|playbin3|decodebin|decodebin3|uridecodebin FILE [TIMEOUT]

Run by tests/autoplug/ (tests/lib/autoplug_testing.py) with GST_PLUGIN_FEATURE_RANK lowering the other
H.264 decoders."""
import hashlib
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

from bus_wait import play_until_end  # noqa: E402

DECODER_KLASS = "Decoder/Video"


def main(app: str, path: str, timeout: float) -> int:
    Gst.init(None)
    digest = hashlib.md5()
    frames = 0
    decoders = []

    def note_element(element):
        factory = element.get_factory()
        if factory is not None and DECODER_KLASS in (factory.get_metadata("klass") or ""):
            decoders.append(factory.get_name())

    def on_sample(sink):
        nonlocal frames
        sample = sink.emit("pull-sample")
        buffer = sample.get_buffer()
        ok, info = buffer.map(Gst.MapFlags.READ)
        if ok:
            digest.update(info.data)
            buffer.unmap(info)
        frames += 1
        return Gst.FlowReturn.OK

    sink_description = "videoconvert ! video/x-raw,format=I420 ! appsink name=out emit-signals=true sync=false"
    uri = Gst.filename_to_uri(path)
    if app in ("playbin", "playbin3"):
        pipeline = Gst.ElementFactory.make(app, None)
        pipeline.set_property("uri", uri)
        pipeline.set_property("video-sink", Gst.parse_bin_from_description(sink_description, True))
        pipeline.set_property("audio-sink", Gst.ElementFactory.make("fakesink", None))
        pipeline.connect("element-setup", lambda _bin, element: note_element(element))
        sink = pipeline.get_property("video-sink").get_by_name("out")
    else:
        source = f"filesrc location=\"{path}\" ! {app}" if app != "uridecodebin" else f"uridecodebin uri=\"{uri}\""
        pipeline = Gst.parse_launch(f"{source} name=dec ! {sink_description}")
        pipeline.get_by_name("dec").connect("deep-element-added", lambda _bin, _sub, element: note_element(element))
        sink = pipeline.get_by_name("out")
    sink.connect("new-sample", on_sample)

    ended, errors = play_until_end(pipeline, timeout, with_debug=False)
    print(f"{app} decoder={','.join(decoders) or 'none'} frames={frames} md5={digest.hexdigest()} "
          f"errors={len(errors)} ended={ended}")
    for error in errors:
        print(f"  ERROR {error}")
    return 0 if ended == "eos" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else 60.0))
