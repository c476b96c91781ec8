#!/usr/bin/python3
"""Soak driver for bench/soak.sh: runs one GStreamer pipeline until FRAMES buffers have reached
the element named `sink`, and samples this process's resident set size every INTERVAL frames.

    /usr/bin/python3 bench/lib/soak_run.py FRAMES INTERVAL 'PIPELINE ... ! fakesink name=sink'

Prints one line per sample, "sample FRAMES RSS_KIB ELAPSED_S", then (when the pipeline has an
element named `codec` with an active-backend property) "backend NAME", then "done FRAMES
ELAPSED_S", and exits 0; an ERROR, an EOS before FRAMES, or no frame for STALL seconds (environment
SWIFTVT_SOAK_STALL, default 60) print "failed: ..." and exit 1. Needs Debian's interpreter
(python3-gi); the pyenv python3 on PATH has no GI bindings.

The pipeline runs in this process, so /proc/self/status is the pipeline's own VmRSS: no helper
process (gst-launch-1.0 + a poller) whose sampling moments would drift from the frame count.
"""
import os
import sys
import threading
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402


def vm_rss_kib() -> int:
    # VmRSS is what the kernel counts as resident for the whole process (all threads), in kB.
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def main(frames_wanted: int, interval: int, description: str) -> int:
    Gst.init(None)
    stall_seconds = float(os.environ.get("SWIFTVT_SOAK_STALL", "60"))
    pipeline = Gst.parse_launch(description)
    sink = pipeline.get_by_name("sink")
    if sink is None:
        print("failed: the pipeline has no element named sink", flush=True)
        return 1
    loop = GLib.MainLoop()
    state = {"frames": 0, "last_frame_time": time.monotonic(), "result": None}
    lock = threading.Lock()
    start = time.monotonic()

    def finish(result: str) -> bool:
        # Runs on the main loop (idle or bus callback): first result wins.
        if state["result"] is None:
            state["result"] = result
            loop.quit()
        return False

    def on_buffer(_pad, _info):
        # Streaming thread. Only counts and samples; the main loop does the stopping, because
        # a state change from a streaming thread would deadlock.
        with lock:
            state["frames"] += 1
            frames = state["frames"]
            state["last_frame_time"] = time.monotonic()
        if frames % interval == 0 and frames <= frames_wanted:
            print(f"sample {frames} {vm_rss_kib()} {time.monotonic() - start:.1f}", flush=True)
        if frames == frames_wanted:
            GLib.idle_add(finish, "done")
        return Gst.PadProbeReturn.OK

    sink.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, on_buffer)

    def on_message(_bus, message):
        if message.type == Gst.MessageType.ERROR:
            error, debug = message.parse_error()
            finish(f"failed: ERROR from {message.src.get_name()}: {error.message} ({debug})")
        elif message.type == Gst.MessageType.EOS:
            finish(f"failed: EOS after {state['frames']} frames, before {frames_wanted}")
        return True

    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_message)

    def watchdog() -> bool:
        with lock:
            idle = time.monotonic() - state["last_frame_time"]
            frames = state["frames"]
        if idle > stall_seconds:
            finish(f"failed: no frame for {idle:.0f} s (stalled after {frames} frames)")
            return False
        return True

    GLib.timeout_add_seconds(5, watchdog)
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        # The ERROR message that explains it is on the bus: let the loop pick it up.
        GLib.timeout_add_seconds(2, finish, "failed: the pipeline would not start")
    loop.run()
    # Which backend did the work (libavcodec, x264, VA-API) is read while the session still exists.
    codec = pipeline.get_by_name("codec")
    if codec is not None and codec.find_property("active-backend") is not None:
        print(f"backend {codec.get_property('active-backend')}", flush=True)
    pipeline.set_state(Gst.State.NULL)
    elapsed = time.monotonic() - start
    if state["result"] == "done":
        print(f"done {frames_wanted} {elapsed:.1f}", flush=True)
        return 0
    print(state["result"], flush=True)
    return 1


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
