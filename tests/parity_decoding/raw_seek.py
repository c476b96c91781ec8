#!/usr/bin/python3
"""Seeking in an unindexed H.264 byte-stream file (issue 32, row 3), against h264parse.

    raw_seek.py FILE.264 PARSER SECONDS [SECONDS...]

Decodes FILE whole once through `PARSER ! avdec_h264` to know every picture's output index and
PTS without seeking; then runs `filesrc ! PARSER ! avdec_h264 ! appsink`, and for each SECONDS
makes a flushing ACCURATE seek and then a KEY_UNIT|SNAP_BEFORE seek there, pulling the first
picture after each. Prints one line per seek:
`accurate|key-unit SECONDS -> frame INDEX pts PTS_S unseeked UNSEEKED_S`, INDEX being the source
picture the decoded one equals (-1: none, a picture decoded without its references) and
UNSEEKED_S the time the same parser gave that picture when playing from the start. First line:
`first_pts S`, the first picture's time without seeking. Exit 0 when every seek gave a picture.
"""
import hashlib
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
from gi.repository import Gst, GstApp  # noqa: E402,F401

TIMEOUT = 30 * Gst.SECOND


def digest(sample: Gst.Sample) -> str:
    buffer = sample.get_buffer()
    ok, mapped = buffer.map(Gst.MapFlags.READ)
    if not ok:
        return ""
    value = hashlib.md5(bytes(mapped.data)).hexdigest()
    buffer.unmap(mapped)
    return value


def reference(path: str, parser: str) -> dict[str, tuple[int, int]]:
    pipeline = Gst.parse_launch(
        f"filesrc location={path} ! {parser} ! avdec_h264 ! video/x-raw,format=I420 ! appsink name=sink "
        "sync=false max-buffers=4")
    sink = pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    frames: dict[str, tuple[int, int]] = {}
    index = 0
    while (sample := sink.try_pull_sample(TIMEOUT)) is not None:
        frames.setdefault(digest(sample), (index, sample.get_buffer().pts))
        index += 1
    pipeline.set_state(Gst.State.NULL)
    return frames


def main(path: str, parser: str, positions: list[float]) -> int:
    Gst.init(None)
    frames = reference(path, parser)
    first = min((pts for index, pts in frames.values() if index == 0), default=-1)
    print(f"first_pts {first / Gst.SECOND:.3f}")
    pipeline = Gst.parse_launch(
        f"filesrc location={path} ! {parser} ! avdec_h264 ! video/x-raw,format=I420 ! appsink name=sink "
        "sync=false max-buffers=1")
    sink = pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PAUSED)
    pipeline.get_state(TIMEOUT)
    status = 0
    for seconds in positions:
        for name, flags in (("accurate", Gst.SeekFlags.ACCURATE),
                            ("key-unit", Gst.SeekFlags.KEY_UNIT | Gst.SeekFlags.SNAP_BEFORE)):
            pipeline.seek_simple(Gst.Format.TIME, Gst.SeekFlags.FLUSH | flags, int(seconds * Gst.SECOND))
            pipeline.get_state(TIMEOUT)
            sample = sink.try_pull_preroll(TIMEOUT)
            if sample is None:
                print(f"{name} {seconds:g} -> no picture")
                status = 1
                continue
            pts = sample.get_buffer().pts
            pts_text = f"{pts / Gst.SECOND:.3f}" if pts != Gst.CLOCK_TIME_NONE else "none"
            index, unseeked = frames.get(digest(sample), (-1, Gst.CLOCK_TIME_NONE))
            unseeked_text = f"{unseeked / Gst.SECOND:.3f}" if unseeked != Gst.CLOCK_TIME_NONE else "none"
            print(f"{name} {seconds:g} -> frame {index} pts {pts_text} unseeked {unseeked_text}")
    pipeline.set_state(Gst.State.NULL)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], [float(value) for value in sys.argv[3:]]))
