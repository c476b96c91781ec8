#!/usr/bin/python3
"""Decoders whose pictures are held downstream (issue 32, rows 1 and 2), against the peer in the
same pipeline.

    held_frames.py reverse FILE.mp4 DECODER START END     reverse playback of [START, END) s
    held_frames.py hold FILE.mp4 DECODER K                an application keeping the last K samples
    held_frames.py hold-meta FILE.mp4 DECODER K           the same, and the sink announces GstVideoMeta
                                                          (the decoder hands on its own pictures)

Prints one line: `frames N first_pts P last_pts Q checksum C ended eos|error|timeout`, where the
checksum is an MD5 over every frame's PTS and pixels in arrival order (equal for two decoders
that gave the same pictures at the same times). Exit 0 on EOS, 1 otherwise.
"""
import hashlib
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstApp, GstVideo  # noqa: E402,F401

TIMEOUT_S = 60


def run(mode: str, path: str, decoder: str, args: list[str]) -> int:
    Gst.init(None)
    if mode == "hold-meta":
        return hold_with_video_meta(path, decoder, int(args[0]))
    pipeline = Gst.parse_launch(
        f"filesrc location={path} ! qtdemux ! h264parse ! {decoder} ! videoconvert ! "
        "video/x-raw,format=I420 ! appsink name=sink sync=false emit-signals=false"
    )
    sink = pipeline.get_by_name("sink")
    digest = hashlib.md5()
    held: list[Gst.Sample] = []
    keep = int(args[0]) if mode.startswith("hold") else 0
    timestamps: list[int] = []

    if mode == "reverse":
        start, end = (float(value) for value in args[:2])
        pipeline.set_state(Gst.State.PAUSED)
        pipeline.get_state(TIMEOUT_S * Gst.SECOND)
        # Drop the preroll sample: the pipeline prerolled forward from 0.
        sink.try_pull_preroll(0)
        ok = pipeline.seek(-1.0, Gst.Format.TIME, Gst.SeekFlags.FLUSH | Gst.SeekFlags.ACCURATE,
                           Gst.SeekType.SET, int(start * Gst.SECOND), Gst.SeekType.SET, int(end * Gst.SECOND))
        if not ok:
            print("seek refused", file=sys.stderr)
            return 1
    pipeline.set_state(Gst.State.PLAYING)

    ended = "timeout"
    while True:
        sample = sink.try_pull_sample(TIMEOUT_S * Gst.SECOND)
        if sample is None:
            message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
            if sink.is_eos():
                ended = "eos"
            elif message is not None:
                ended = "error"
                print(message.parse_error()[0].message, file=sys.stderr)
            break
        buffer = sample.get_buffer()
        timestamps.append(buffer.pts)
        digest.update(buffer.pts.to_bytes(8, "little"))
        ok, info = buffer.map(Gst.MapFlags.READ)
        if ok:
            digest.update(bytes(info.data))
            buffer.unmap(info)
        if keep:
            # The application keeps the last K samples (and so their buffers).
            held.append(sample)
            if len(held) > keep:
                held.pop(0)
    pipeline.set_state(Gst.State.NULL)
    first = timestamps[0] if timestamps else -1
    last = timestamps[-1] if timestamps else -1
    print(f"frames {len(timestamps)} first_pts {first} last_pts {last} checksum {digest.hexdigest()} ended {ended}")
    return 0 if ended == "eos" else 1


def hold_with_video_meta(path: str, decoder: str, keep: int) -> int:
    """fakevideosink announces GstVideoMeta (the decoder hands on its own pictures, no copy); a
    probe before it keeps references to the last K buffers, as an application would."""
    pipeline = Gst.parse_launch(
        f"filesrc location={path} ! qtdemux ! h264parse ! {decoder} ! video/x-raw,format=I420 ! "
        "fakevideosink name=sink sync=false"
    )
    held: list[Gst.Buffer] = []
    timestamps: list[int] = []
    meta_seen = [0]

    def keep_buffer(_pad, info):
        buffer = info.get_buffer()
        timestamps.append(buffer.pts)
        if GstVideo.buffer_get_video_meta(buffer) is not None:
            meta_seen[0] += 1
        held.append(buffer)
        if len(held) > keep:
            held.pop(0)
        return Gst.PadProbeReturn.OK

    pipeline.get_by_name("sink").get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, keep_buffer)
    pipeline.set_state(Gst.State.PLAYING)
    message = pipeline.get_bus().timed_pop_filtered(TIMEOUT_S * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    ended = "timeout" if message is None else ("eos" if message.type == Gst.MessageType.EOS else "error")
    pipeline.set_state(Gst.State.NULL)
    held.clear()
    first = timestamps[0] if timestamps else -1
    last = timestamps[-1] if timestamps else -1
    print(f"frames {len(timestamps)} first_pts {first} last_pts {last} video_meta {meta_seen[0]} ended {ended}")
    return 0 if ended == "eos" else 1


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]))
