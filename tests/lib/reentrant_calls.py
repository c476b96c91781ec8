#!/usr/bin/env python3
"""Calls back into SwiftVT's elements from the places where an element calls out: a downstream
caps query and a bus sync handler. Each element must not hold one of its own locks there (Swift's
`Mutex` is not recursive: a call back on the same thread would deadlock or trap).

    reentrant_calls.py CASE        (run by tests/reentrant_calls/, one process per case)

Each case runs a real pipeline on the streaming thread's own stack: while SwiftVT's element asks
downstream for its caps, a pad probe on the downstream element (or a bus sync handler) sends a
CAPS event back into the element's sink pad, which reaches the element's set_caps/set_format on
the same thread (the pad's stream lock is recursive). The case passes when the pipeline reaches
EOS with every frame and the call back happened; a deadlock is caught by the test's timeout on this
process. Prints what happened as one JSON object: {"name", "ended": "eos"|"error"|"timeout",
"error", "reentries", "frames", "expected_frames"}."""
import json
import sys
import threading

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

FRAMES = 30
H264_SOURCE = (
    "videotestsrc num-buffers={n} ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 "
    "! x264enc speed-preset=ultrafast bframes=2 key-int-max=10 ! video/x-h264,stream-format=byte-stream "
)
H265_SOURCE = (
    "videotestsrc num-buffers={n} ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 "
    "! x265enc speed-preset=ultrafast key-int-max=10 ! video/x-h265,stream-format=byte-stream "
)


def caps_event_again(element, extra_field):
    """Sends the element's current sink caps back into its sink pad (with one harmless field
    changed, so that a base class that ignores identical caps still calls the subclass)."""
    pad = element.get_static_pad("sink")
    caps = pad.get_current_caps()
    if caps is None:
        return False
    caps = caps.copy()
    if extra_field:
        caps.set_value("swiftvt-reentry", extra_field)
    return pad.send_event(Gst.Event.new_caps(caps))


def call_back(element, action, origin):
    """One call back into the element: `caps` sends its sink caps again, `NAME=VALUE` sets a
    property (as an application would from a probe or a bus handler)."""
    if action == "caps":
        return caps_event_again(element, origin)
    name, value = action.split("=")
    element.set_property(name, int(value))
    return element.get_property(name) == int(value)


def run_case(name, description, element_name, trigger, action="caps"):
    """trigger: 'caps-query' (a probe on the element's downstream peer answers every caps query by
    calling back into the element) or 'bus-sync' (a sync handler answers the element's first
    message by calling back)."""
    pipeline = Gst.parse_launch(description)
    element = pipeline.get_by_name(element_name)
    downstream = pipeline.get_by_name("downstream")
    frames = 0
    reentries = []
    sending = False
    lock = threading.Lock()

    def sending_now(value):
        nonlocal sending
        sending = value

    def count(_pad, _info):
        nonlocal frames
        frames += 1
        return Gst.PadProbeReturn.OK

    sink = pipeline.get_by_name("sink")
    sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, count)

    def on_query(_pad, info):
        query = info.get_query()
        # The caps query (output formats) and the allocation query (buffer pools) the element
        # sends downstream while negotiating.
        if query.type in (Gst.QueryType.CAPS, Gst.QueryType.ALLOCATION):
            with lock:
                # One call back at a time: handling it makes the element query again.
                busy = bool(reentries) or sending
                if not busy:
                    sending_now(True)
            # Once the element has caps (earlier queries come from upstream's negotiation through
            # it): the element is inside its own caps query to downstream; call back into it.
            if not busy:
                handled = call_back(element, action, "query")
                with lock:
                    if handled:
                        reentries.append("query")
                    sending_now(False)
        return Gst.PadProbeReturn.OK

    if trigger == "caps-query":
        downstream.get_static_pad("sink").add_probe(Gst.PadProbeType.QUERY_DOWNSTREAM, on_query)
    else:
        def sync_handler(_bus, message):
            if message.src == element and message.type in (Gst.MessageType.LATENCY, Gst.MessageType.WARNING,
                                                           Gst.MessageType.INFO, Gst.MessageType.ELEMENT,
                                                           Gst.MessageType.STREAM_STATUS):
                with lock:
                    done = bool(reentries)
                if not done and call_back(element, action, "bus"):
                    with lock:
                        reentries.append("bus")
            return Gst.BusSyncReply.PASS
        pipeline.get_bus().set_sync_handler(sync_handler)

    pipeline.set_state(Gst.State.PLAYING)
    message = pipeline.get_bus().timed_pop_filtered(60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    ended = "timeout" if message is None else "eos" if message.type == Gst.MessageType.EOS else "error"
    return {"name": name, "ended": ended,
            "error": message.parse_error()[0].message if ended == "error" else None,
            "reentries": reentries, "frames": frames, "expected_frames": FRAMES}


def cases():
    h264 = H264_SOURCE.format(n=FRAMES)
    cases = [
        ("h264parse-to-avcc, re-entered from a downstream query",
         h264 + "! h264parse-to-avcc name=element ! identity name=downstream ! fakesink name=sink",
         "element", "caps-query"),
        ("vtdec, re-entered from a downstream query",
         h264 + "! vtdec name=element ! identity name=downstream ! fakesink name=sink",
         "element", "caps-query"),
        ("vtenc, re-entered from a downstream query",
         f"videotestsrc num-buffers={FRAMES} ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 "
         "! vtenc name=element ! identity name=downstream ! fakesink name=sink",
         "element", "caps-query", "bitrate=1500"),
        ("h265parse-to-hvcc, re-entered from a downstream query",
         H265_SOURCE.format(n=FRAMES)
         + "! h265parse-to-hvcc name=element ! identity name=downstream ! fakesink name=sink",
         "element", "caps-query"),
        ("vtdec, re-entered from a bus sync handler",
         h264 + "! vtdec name=element ! identity name=downstream ! fakesink name=sink",
         "element", "bus-sync"),
    ]
    return cases


if __name__ == "__main__":
    Gst.init(None)
    print(json.dumps(run_case(*cases()[int(sys.argv[1])])))
