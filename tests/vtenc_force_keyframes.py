#!/usr/bin/env python3
"""Runs a gst-launch style pipeline in which an element named `forcer` (an identity in front of
the encoder) sends downstream force-key-unit events (GstForceKeyUnit, what applications and
splitmuxsink send) for the given frame numbers before the first buffer; the encoder must make
those frames IDR pictures. Exits 0 at EOS, 1 on an error message (printed).

    vtenc_force_keyframes.py FPS_N FPS_D FRAMES PIPELINE
    vtenc_force_keyframes.py 30 1 7,45 "filesrc ... ! identity name=forcer ! vtenc ! ..."
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstVideo  # noqa: E402


def main(fps_n: int, fps_d: int, frames: list[int], description: str) -> int:
    Gst.init(None)
    pipeline = Gst.parse_launch(description)
    forcer = pipeline.get_by_name("forcer")
    if forcer is None:
        print("vtenc_force_keyframes: the pipeline has no element named forcer", file=sys.stderr)
        return 1
    sent = False

    def probe(pad, info):
        nonlocal sent
        if not sent:
            sent = True
            for frame in frames:
                # Running time of frame N from a source starting at 0 (rawvideoparse, decoders).
                running_time = frame * Gst.SECOND * fps_d // fps_n
                event = GstVideo.video_event_new_downstream_force_key_unit(
                    Gst.CLOCK_TIME_NONE, Gst.CLOCK_TIME_NONE, running_time, True, frame)
                pad.push_event(event)
        return Gst.PadProbeReturn.OK

    forcer.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, probe)
    pipeline.set_state(Gst.State.PLAYING)
    bus = pipeline.get_bus()
    message = bus.timed_pop_filtered(600 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if message is None:
        print("vtenc_force_keyframes: no EOS within 600 s", file=sys.stderr)
        return 1
    if message.type == Gst.MessageType.ERROR:
        error, debug = message.parse_error()
        print(f"vtenc_force_keyframes: ERROR {error.message} ({debug})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), [int(f) for f in sys.argv[3].split(",") if f], sys.argv[4]))
