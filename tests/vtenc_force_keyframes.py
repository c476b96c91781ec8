#!/usr/bin/env python3
"""Runs a gst-launch style pipeline in which an element named `forcer` (an identity in front of
the encoder) sends a downstream force-key-unit event (GstForceKeyUnit, what applications and
splitmuxsink send) right before each of the given frames; the encoder must make those frames
IDR pictures. Exits 0 at EOS, 1 on an error message (printed).

    vtenc_force_keyframes.py FRAMES PIPELINE
    vtenc_force_keyframes.py 7,45 "filesrc ... ! identity name=forcer ! vtenc ! ..."

The events ask for a key unit "as soon as possible" (running-time GST_CLOCK_TIME_NONE), so the
frame that follows each event is the one forced, whatever timestamp offset the encoder applies
(vtenc and x264enc shift PTS by 1000 hours with B-frames, gst_video_encoder_set_min_pts).
"""
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GObject, Gst  # noqa: E402


def typed(gtype, value):
    """A GValue of an exact type (GstClockTime fields are guint64, which a Python int is not)."""
    result = GObject.Value()
    result.init(gtype)
    result.set_value(value)
    return result


def force_key_unit_event(count: int) -> Gst.Event:
    # What gst_video_event_new_downstream_force_key_unit makes (gstvideoevent.c's field names),
    # built here so the test needs only the Gst typelib.
    structure = Gst.Structure.new_empty("GstForceKeyUnit")
    structure.set_value("timestamp", typed(GObject.TYPE_UINT64, Gst.CLOCK_TIME_NONE))
    structure.set_value("stream-time", typed(GObject.TYPE_UINT64, Gst.CLOCK_TIME_NONE))
    structure.set_value("running-time", typed(GObject.TYPE_UINT64, Gst.CLOCK_TIME_NONE))
    structure.set_value("all-headers", True)
    structure.set_value("count", typed(GObject.TYPE_UINT, count))
    return Gst.Event.new_custom(Gst.EventType.CUSTOM_DOWNSTREAM, structure)


def main(frames: set[int], description: str) -> int:
    Gst.init(None)
    pipeline = Gst.parse_launch(description)
    forcer = pipeline.get_by_name("forcer")
    if forcer is None:
        print("vtenc_force_keyframes: the pipeline has no element named forcer", file=sys.stderr)
        return 1
    seen = 0

    def probe(pad, info):
        nonlocal seen
        if seen in frames:
            pad.push_event(force_key_unit_event(seen))
        seen += 1
        return Gst.PadProbeReturn.OK

    forcer.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, probe)
    pipeline.set_state(Gst.State.PLAYING)
    bus = pipeline.get_bus()
    # Well under vtenc-va.sh's outer limit, so a stuck encode is reported here rather than killed.
    message = bus.timed_pop_filtered(300 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if message is None:
        print("vtenc_force_keyframes: no EOS within 300 s", file=sys.stderr)
        return 1
    if message.type == Gst.MessageType.ERROR:
        error, debug = message.parse_error()
        print(f"vtenc_force_keyframes: ERROR {error.message} ({debug})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main({int(f) for f in sys.argv[1].split(",") if f}, sys.argv[2]))
