#!/usr/bin/python3
"""A decoder on live input (issue 32, rows 7 and 8), beside the peer in the same pipeline.

    live_latency.py DECODER baseline|bframes

Runs `videotestsrc is-live=true ! x264enc tune=zerolatency ! rtph264pay ! rtph264depay ! h264parse
! DECODER ! fakesink` (RTP as on a network, without the network), or with `x264enc bframes=2` and
no RTP (whose caps ask for constrained baseline), and prints one line:

    latency_ms L held_max H held_median M after_eos E frames N

- L: the latency the decoder adds (the LATENCY query on its source pad less the one on its sink
  pad's peer), in ms;
- H, M: frames inside the decoder when a picture leaves it (frames that entered less frames that
  left before it): 1 means each picture comes out while its own frame is being handled;
- E: pictures that left only after EOS reached the decoder (held back until the drain).
Counts, not times: the figures do not depend on the machine's speed.
"""
import statistics
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

FRAMES = 60


def main(decoder: str, kind: str) -> int:
    Gst.init(None)
    encoder = ("x264enc tune=zerolatency" if kind == "baseline"
               else "x264enc speed-preset=veryfast bframes=2 key-int-max=30")
    # RTP's caps ask for constrained baseline, which has no B-frames: those go without it.
    transport = "rtph264pay ! rtph264depay ! " if kind == "baseline" else ""
    pipeline = Gst.parse_launch(
        f"videotestsrc is-live=true num-buffers={FRAMES} ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 "
        f"! {encoder} ! {transport}h264parse ! {decoder} name=dec ! fakesink sync=true"
    )
    dec = pipeline.get_by_name("dec")
    sink_pad = dec.get_static_pad("sink")
    src_pad = dec.get_static_pad("src")
    counts = {"in": 0, "out": 0, "eos": False, "after_eos": 0}
    in_flight: list[int] = []

    def entered(_pad, info):
        if info.type & Gst.PadProbeType.BUFFER:
            counts["in"] += 1
        elif info.get_event().type == Gst.EventType.EOS:
            counts["eos"] = True
        return Gst.PadProbeReturn.OK

    def left(_pad, _info):
        in_flight.append(counts["in"] - counts["out"])
        counts["out"] += 1
        if counts["eos"]:
            counts["after_eos"] += 1
        return Gst.PadProbeReturn.OK

    sink_pad.add_probe(Gst.PadProbeType.BUFFER | Gst.PadProbeType.EVENT_DOWNSTREAM, entered)
    src_pad.add_probe(Gst.PadProbeType.BUFFER, left)
    pipeline.set_state(Gst.State.PLAYING)
    bus = pipeline.get_bus()
    latency_ms = None
    while True:
        message = bus.timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
        if message is None or message.type == Gst.MessageType.ERROR:
            pipeline.set_state(Gst.State.NULL)
            print("did not reach EOS:", message.parse_error()[0].message if message else "timeout", file=sys.stderr)
            return 1
        # The decoder knows its latency once its session started (the first frame): asked at EOS,
        # while the pads are still active.
        if message.type == Gst.MessageType.EOS:
            upstream = Gst.Query.new_latency()
            own = Gst.Query.new_latency()
            if sink_pad.peer_query(upstream) and src_pad.query(own):
                latency_ms = (own.parse_latency()[1] - upstream.parse_latency()[1]) / 1e6
            break
    pipeline.set_state(Gst.State.NULL)
    if latency_ms is None:
        latency_ms = -1.0
    print(f"latency_ms {latency_ms:.1f} held_max {max(in_flight, default=0)} "
          f"held_median {statistics.median(in_flight) if in_flight else 0} after_eos "
          f"{counts['after_eos']} frames {counts['out']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
