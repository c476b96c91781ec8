#!/usr/bin/python3
"""A downstream that changes the format it asks for while playing (issue 32, row 13).

    reconfigure_format.py FILE.264 DECODER

Runs `filesrc ! h264parse ! DECODER ! capsfilter caps=I420 ! appsink`, and after 60 frames sets
the capsfilter to NV12 (which sends RECONFIGURE upstream). Prints one line per frame,
`PTS FORMAT MD5-of-the-NV12-picture`, where I420 frames are interleaved to NV12 here first, so that
two decoders can be compared frame by frame whatever format each delivered. Exit 1 without EOS.
"""
import hashlib
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
gi.require_version("GstApp", "1.0")
from gi.repository import Gst, GstApp, GstVideo  # noqa: E402,F401

SWITCH_AT = 60


def nv12_digest(sample: Gst.Sample) -> tuple[str, str]:
    info = GstVideo.VideoInfo.new_from_caps(sample.get_caps())
    frame = GstVideo.VideoFrame()
    buffer = sample.get_buffer()
    ok, mapped = buffer.map(Gst.MapFlags.READ)
    if not ok:
        return info.finfo.name, "unmapped"
    data = bytes(mapped.data)
    buffer.unmap(mapped)
    meta = GstVideo.buffer_get_video_meta(buffer)
    strides = list(meta.stride) if meta else list(info.stride)
    offsets = list(meta.offset) if meta else list(info.offset)
    width, height = info.width, info.height
    digest = hashlib.md5()
    for row in range(height):
        start = offsets[0] + row * strides[0]
        digest.update(data[start:start + width])
    chroma_width, chroma_height = (width + 1) // 2, (height + 1) // 2
    name = info.finfo.name
    for row in range(chroma_height):
        if name == "NV12":
            start = offsets[1] + row * strides[1]
            digest.update(data[start:start + 2 * chroma_width])
        else:
            cb = data[offsets[1] + row * strides[1]:][:chroma_width]
            cr = data[offsets[2] + row * strides[2]:][:chroma_width]
            digest.update(bytes(value for pair in zip(cb, cr) for value in pair))
    del frame
    return name, digest.hexdigest()


def main(path: str, decoder: str) -> int:
    Gst.init(None)
    pipeline = Gst.parse_launch(
        f"filesrc location={path} ! h264parse ! {decoder} ! capsfilter name=filter caps=video/x-raw,format=I420 "
        "! appsink name=sink sync=false max-buffers=1"
    )
    sink = pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    count = 0
    while True:
        sample = sink.try_pull_sample(30 * Gst.SECOND)
        if sample is None:
            break
        count += 1
        name, digest = nv12_digest(sample)
        print(sample.get_buffer().pts, name, digest)
        if count == SWITCH_AT:
            pipeline.get_by_name("filter").set_property("caps", Gst.Caps.from_string("video/x-raw,format=NV12"))
    ended = sink.is_eos()
    pipeline.set_state(Gst.State.NULL)
    return 0 if ended else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
