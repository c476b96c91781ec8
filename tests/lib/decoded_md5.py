#!/usr/bin/env python3
"""Runs a pipeline description that ends in decoded video, into an appsink, and prints one JSON
line: {"frames": N, "md5": HEX, "ended": "eos"|"error"|"timeout", "errors": [...]}. The MD5 is
over the pictures' planes, cropped to the visible width and height (no stride padding), in output
order: libavcodec's rawvideo output, which the corpus manifests' ref_md5 are of. Interlaced
`alternate` caps (one field per buffer) are hashed field by field, as libavcodec outputs them.

    decoded_md5.py "filesrc location=F ! h265parse ! avdec_h265" [TIMEOUT]
"""
import hashlib
import json
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstVideo  # noqa: E402

from bus_wait import play_until_end  # noqa: E402


def plane_rows(info, field_height):
    """(plane, offset, stride, rows, row bytes) of every plane of `info` (planar YUV)."""
    finfo = info.finfo
    for plane in range(finfo.n_planes):
        component = plane  # planar formats: plane i holds component i
        rows = -((-field_height) >> finfo.h_sub[component])
        width = -((-info.width) >> finfo.w_sub[component])
        yield plane, info.offset[plane], info.stride[plane], rows, width * finfo.pixel_stride[component]


def main(description, timeout):
    Gst.init(None)
    pipeline = Gst.parse_launch(f"{description} ! appsink name=out emit-signals=true sync=false")
    sink = pipeline.get_by_name("out")
    digest = hashlib.md5()
    frames = 0

    def on_sample(appsink):
        nonlocal frames
        sample = appsink.emit("pull-sample")
        caps = sample.get_caps()
        info = GstVideo.VideoInfo.new_from_caps(caps)
        alternate = caps.get_structure(0).get_string("interlace-mode") == "alternate"
        field_height = (info.height + 1) // 2 if alternate else info.height
        buffer = sample.get_buffer()
        meta = GstVideo.buffer_get_video_meta(buffer)
        ok, mapped = buffer.map(Gst.MapFlags.READ)
        if ok:
            data = mapped.data
            for plane, offset, stride, rows, row_bytes in plane_rows(info, field_height):
                if meta is not None:
                    offset, stride = meta.offset[plane], meta.stride[plane]
                for row in range(rows):
                    start = offset + row * stride
                    digest.update(data[start:start + row_bytes])
            buffer.unmap(mapped)
        frames += 1
        return Gst.FlowReturn.OK

    sink.connect("new-sample", on_sample)
    ended, errors = play_until_end(pipeline, timeout)
    print(json.dumps({"frames": frames, "md5": digest.hexdigest(), "ended": ended, "errors": errors}))
    return 0 if ended == "eos" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 120))
