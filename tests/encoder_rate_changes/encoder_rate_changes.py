#!/usr/bin/env python3
"""Runs one encoder pipeline, changes encoder properties while it is PLAYING, and reports every
encoded frame's size (tests/lib/rate_changes_testing.py computes the rates and windows from them).

    encoder_rate_changes.py SOURCE ENCODER [--at FRAME NAME=VALUE ...] [--output FILE] [--timeout S]

SOURCE and ENCODER are gst-launch fragments; the encoder must be named `enc`. At input frame
FRAME (counted on the encoder's sink pad, before the encoder sees it, in the streaming thread as
an application's probe would) each NAME=VALUE is set on the encoder: the change is exact to the
frame, not to the wall clock. --output writes the stream as H.264 byte-stream (SPS/PPS before
each IDR picture, counted in the sizes) for a decoder to check. Output on stdout, one line each:

    frame PTS_NS SIZE KEY       (each output buffer, in output = decode order)
    warning TEXT                (each WARNING message on the bus, with its element)
    error TEXT                  (each ERROR message)
    end eos|error|timeout

Exits 0 at EOS, 1 otherwise."""
import argparse
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, GObject, Gst  # noqa: E402


def parse_value(element, name, text):
    """The property's own type, as gst-launch would convert it."""
    spec = element.find_property(name)
    if spec is None:
        raise SystemExit(f"encoder_rate_changes: the encoder has no property {name}")
    kind = GObject.type_name(spec.value_type)
    if kind in ("guint", "gint", "guint64", "gint64"):
        return int(text)
    if kind == "gdouble":
        return float(text)
    if kind == "gboolean":
        return text.lower() in ("1", "true", "yes")
    return text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("encoder")
    parser.add_argument("--at", nargs="+", action="append", default=[], metavar=("FRAME", "NAME=VALUE"))
    parser.add_argument("--output")
    parser.add_argument("--timeout", type=float, default=240)
    args = parser.parse_args()
    Gst.init(None)
    sink = "fakesink sync=false"
    if args.output:
        sink = f"video/x-h264,stream-format=byte-stream ! filesink location={args.output}"
    pipeline = Gst.parse_launch(f"{args.source} ! {args.encoder} ! {sink}")
    encoder = pipeline.get_by_name("enc")
    if encoder is None:
        raise SystemExit("encoder_rate_changes: name the encoder enc")
    changes = {}
    for item in args.at:
        frame = int(item[0])
        changes.setdefault(frame, [])
        for assignment in item[1:]:
            name, value = assignment.split("=", 1)
            changes[frame].append((name, parse_value(encoder, name, value)))

    counted = [0]

    def on_input(pad, info):
        # Before the encoder handles the frame: the change applies from this frame on.
        for name, value in changes.get(counted[0], []):
            encoder.set_property(name, value)
            print(f"set {counted[0]} {name}={encoder.get_property(name)}", flush=True)
        counted[0] += 1
        return Gst.PadProbeReturn.OK

    lines = []

    def on_output(pad, info):
        buffer = info.get_buffer()
        key = not buffer.has_flags(Gst.BufferFlags.DELTA_UNIT)
        lines.append(f"frame {buffer.pts} {buffer.get_size()} {1 if key else 0}")
        return Gst.PadProbeReturn.OK

    encoder.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, on_input)
    encoder.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, on_output)
    loop = GLib.MainLoop()
    end = ["timeout"]

    def on_message(bus, message):
        if message.type == Gst.MessageType.EOS:
            end[0] = "eos"
            loop.quit()
        elif message.type in (Gst.MessageType.WARNING, Gst.MessageType.ERROR):
            error, _ = message.parse_warning() if message.type == Gst.MessageType.WARNING else message.parse_error()
            kind = "warning" if message.type == Gst.MessageType.WARNING else "error"
            lines.append(f"{kind} {message.src.get_name()}: {error.message}")
            if kind == "error":
                end[0] = "error"
                loop.quit()

    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_message)
    GLib.timeout_add(int(args.timeout * 1000), loop.quit)
    pipeline.set_state(Gst.State.PLAYING)
    loop.run()
    pipeline.set_state(Gst.State.NULL)
    for line in lines:
        print(line)
    print(f"end {end[0]}")
    return 0 if end[0] == "eos" else 1


if __name__ == "__main__":
    sys.exit(main())
