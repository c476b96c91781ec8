#!/usr/bin/env python3
"""Closed captions in and out of pipelines, for the caption tests (tests/encoder_controls/test_captions.py).

    captions_tool.py write FRAMES TYPE "ENCODER ! ... ! filesink location=F"
        An appsrc of FRAMES 320x240 I420 pictures at 30/1 (a moving ramp), each with one
        GstVideoCaptionMeta of TYPE (cea708-raw, cea608-s334-1a, cea708-cdp, cea608-raw) holding
        `caption_bytes(TYPE, i)`, into the pipeline tail. Prints {"ended", "errors", "warnings"}.
    captions_tool.py read "filesrc location=F ! ... ! DECODER"
        Decodes into ccextractor, GStreamer's own reader of GstVideoCaptionMeta, and prints
        {"ended", "errors", "frames", "captions": [[pts_ns, "hex of cc_data"], ...]} (captions in
        output order, one entry per meta; frames counts the decoded pictures).
"""
import json
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstVideo  # noqa: E402

from bus_wait import play_until_end  # noqa: E402

WIDTH, HEIGHT, RATE = 320, 240, 30
TYPES = {"cea708-raw": GstVideo.VideoCaptionType.CEA708_RAW,
         "cea608-s334-1a": GstVideo.VideoCaptionType.CEA608_S334_1A,
         "cea708-cdp": GstVideo.VideoCaptionType.CEA708_CDP,
         "cea608-raw": GstVideo.VideoCaptionType.CEA608_RAW}


def odd_parity(byte):
    """CEA-608 bytes carry odd parity in bit 7."""
    return byte | (0x80 if bin(byte).count("1") % 2 == 0 else 0)


def pair(index):
    """A CEA-608 byte pair distinct per frame (printable characters, odd parity)."""
    return [odd_parity(0x20 + index % 90), odd_parity(0x20 + (index * 7) % 90)]


def cc_data(index):
    """The CEA-708 cc_data triplets of frame `index`: a CEA-608 field 1 pair (cc_type 0) and a
    DTVCC packet start (cc_type 3) whose bytes count the frame."""
    return bytes([0xFC, *pair(index), 0xFF, index & 0xFF, (index >> 8) & 0xFF])


def caption_bytes(kind, index):
    if kind == "cea708-raw":
        return cc_data(index)
    if kind == "cea608-raw":
        return bytes(pair(index))
    if kind == "cea608-s334-1a":
        return bytes([0x80 | 9, *pair(index)])  # field 1, line offset 9
    # SMPTE ST 334-2 cdp(): identifier, length, 29.97 (frame rate code 4), ccdata_present |
    # caption_service_active, sequence counter, ccdata_section, footer.
    triplets = cc_data(index)
    body = [0x96, 0x69, 0, 0x4F, 0x43, 0, index & 0xFF, 0x72, 0xE0 | (len(triplets) // 3), *triplets, 0x74, 0,
            index & 0xFF]
    body[2] = len(body) + 1
    body.append((256 - sum(body) % 256) % 256)
    return bytes(body)


def expected_cc_data(kind, index):
    """What a decoder's GstVideoCaptionMeta (CEA708_RAW) holds for frame `index`."""
    if kind in ("cea608-raw", "cea608-s334-1a"):
        return bytes([0xFC, *pair(index)])
    return cc_data(index)


def picture(index):
    """A textured picture panning 3 pixels a frame (smooth motion: the encoders pick B-frames)."""
    luma = bytearray(WIDTH * HEIGHT)
    for y in range(HEIGHT):
        luma[y * WIDTH:(y + 1) * WIDTH] = bytes(((x + 3 * index) * (y // 8 + 1) * 7) % 251 for x in range(WIDTH))
    chroma = bytes([128]) * (WIDTH * HEIGHT // 2)
    return bytes(luma) + chroma


def write(frames, kind, tail, timeout=180):
    caps = f"video/x-raw,format=I420,width={WIDTH},height={HEIGHT},framerate={RATE}/1"
    pipeline = Gst.parse_launch(f"appsrc name=src format=time caps={caps} ! {tail}")
    source = pipeline.get_by_name("src")
    for index in range(frames):
        buffer = Gst.Buffer.new_wrapped(picture(index))
        buffer.pts = index * Gst.SECOND // RATE
        buffer.duration = Gst.SECOND // RATE
        GstVideo.buffer_add_video_caption_meta(buffer, TYPES[kind], caption_bytes(kind, index))
        source.emit("push-buffer", buffer)
    source.emit("end-of-stream")
    warnings = []
    ended, errors = play_until_end(pipeline, timeout, warnings=warnings)
    return {"ended": ended, "errors": errors, "warnings": warnings}


def read(description, timeout=180):
    pipeline = Gst.parse_launch(
        f"{description} ! ccextractor name=cc cc.src ! appsink name=video emit-signals=true sync=false")
    captions, frames = [], [0]
    caption_sink = Gst.ElementFactory.make("appsink", "captions")
    caption_sink.set_property("emit-signals", True)
    caption_sink.set_property("sync", False)
    caption_sink.set_property("async", False)
    extractor = pipeline.get_by_name("cc")

    def on_pad(_element, pad):
        # Added with its pad only: an unlinked sink would never see EOS, nor the pipeline end.
        if pad.get_name() == "caption":
            pipeline.add(caption_sink)
            caption_sink.sync_state_with_parent()
            pad.link(caption_sink.get_static_pad("sink"))

    def on_caption(sink):
        sample = sink.emit("pull-sample")
        buffer = sample.get_buffer()
        captions.append([buffer.pts, buffer.extract_dup(0, buffer.get_size()).hex()])
        return Gst.FlowReturn.OK

    def on_video(sink):
        sink.emit("pull-sample")
        frames[0] += 1
        return Gst.FlowReturn.OK

    extractor.connect("pad-added", on_pad)
    caption_sink.connect("new-sample", on_caption)
    pipeline.get_by_name("video").connect("new-sample", on_video)
    ended, errors = play_until_end(pipeline, timeout)
    return {"ended": ended, "errors": errors, "frames": frames[0], "captions": captions}


def main(arguments):
    Gst.init(None)
    if arguments[0] == "write":
        result = write(int(arguments[1]), arguments[2], arguments[3])
    else:
        result = read(arguments[1])
    print(json.dumps(result))
    return 0 if result["ended"] == "eos" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
