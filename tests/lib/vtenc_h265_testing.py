"""Helpers of the vtenc_h265 suite (tests/vtenc_h265/): PSNR-Y of raw files, the caps an encoder
negotiates."""
import json
import re
import subprocess

from swiftvt_testing import SYSTEM_PYTHON, run


def visible_psnr_y(decoded, source, width, height):
    """PSNR-Y (dB) of two files of 8-bit I420 frames in GStreamer's layout, without the rows'
    padding (garbage that differs between writers; FFmpeg's rawvideo reader would count it)."""
    import math
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import Gst, GstVideo
    Gst.init(None)
    info = GstVideo.VideoInfo.new()
    info.set_format(GstVideo.VideoFormat.I420, width, height)
    a, b = decoded.read_bytes(), source.read_bytes()
    assert len(a) == len(b) and len(a) % info.size == 0, (len(a), len(b), info.size)
    total = 0
    for frame in range(len(a) // info.size):
        for row in range(height):
            start = frame * info.size + info.offset[0] + row * info.stride[0]
            total += sum((x - y) ** 2 for x, y in zip(a[start:start + width], b[start:start + width]))
    mse = total / (len(a) // info.size * width * height)
    return 100.0 if mse == 0 else 10 * math.log10(255 * 255 / mse)


def raw_psnr_y(env, decoded, source, pixfmt, size):
    """PSNR-Y (dB, "inf" as 100) of two raw files of `pixfmt` frames of `size`, paired by position."""
    log = subprocess.run(["ffmpeg", "-v", "info", "-f", "rawvideo", "-pix_fmt", pixfmt, "-s", size, "-i",
                          str(decoded), "-f", "rawvideo", "-pix_fmt", pixfmt, "-s", size, "-i", str(source),
                          "-lavfi", "psnr", "-f", "null", "-"],
                         env=env, capture_output=True, text=True, timeout=300).stderr
    found = re.findall(r"PSNR y:([0-9.a-z]*) ", log)
    assert found, f"FFmpeg measured no PSNR:\n{log[-2000:]}"
    return 100.0 if found[-1] == "inf" else float(found[-1])


# The caps' string fields at a fakesink at preroll (parity_testing.negotiated_caps reads every
# field, and the multiview flags GstVideoEncoder and h265parse put in video caps have no Python type).
CAPS_FIELDS = r"""
import json, sys
import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst
Gst.init(None)
pipeline = Gst.parse_launch(sys.argv[1] + " ! fakesink name=sink")
pipeline.set_state(Gst.State.PAUSED)
pipeline.get_state(60 * Gst.SECOND)
caps = pipeline.get_by_name("sink").get_static_pad("sink").get_current_caps()
structure = caps.get_structure(0)
names = ("stream-format", "profile", "tier", "level")
fields = {name: structure.get_string(name) for name in names}
fields["codec_data"] = structure.has_field("codec_data")
pipeline.set_state(Gst.State.NULL)
print(json.dumps(fields))
"""


def caps_fields(env, description):
    return json.loads(run([SYSTEM_PYTHON, "-c", CAPS_FIELDS, description], env, timeout=120))
