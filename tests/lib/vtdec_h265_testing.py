"""Helpers of tests/vtdec_h265/ (vtdec decoding H.265): decoded planes without GStreamer's row
padding, the corpus streams, the parsers vtdec is tested behind."""
import dataclasses
import hashlib
import re
import subprocess
from pathlib import Path

from swiftvt_testing import SYSTEM_PYTHON

# h265parse-to-hvcc is the project's own parser (issue 35 item 3); its parametrization is skipped
# while the plugin has no such element.
PARSERS = ["h265parse", "h265parse-to-hvcc"]

# libavcodec's pixel format names (MANIFEST.tsv's pix_fmt) as GStreamer formats, with the bytes per
# sample and the chroma subsampling (horizontal, vertical).
FORMATS = {
    "yuv420p": ("I420", 1, 2, 2),
    "yuv420p10le": ("I420_10LE", 2, 2, 2),
    "yuv422p10le": ("I422_10LE", 2, 2, 1),
    "yuv444p": ("Y444", 1, 1, 1),
    "yuv444p10le": ("Y444_10LE", 2, 1, 1),
}

# A corpus stream whose every picture is one field: 352x288 fields, 30 of them (libavcodec's
# output, the manifest's frames), while h265parse announces 352x576 frames.
FIELD_STREAM = "main_interlaced_tff.265"


def element_available(env, name):
    return subprocess.run(["gst-inspect-1.0", name], env=env, capture_output=True, timeout=60).returncode == 0


def planes_per_frame(width, height, bytes_per_sample, sub_x, sub_y):
    """[(row bytes, stride, rows)] of each plane in GStreamer's default layout (rows on 4 bytes)."""
    chroma_width = -(-width // sub_x)
    chroma_height = -(-height // sub_y)
    planes = []
    for plane_width, plane_height in ((width, height), (chroma_width, chroma_height), (chroma_width, chroma_height)):
        row = plane_width * bytes_per_sample
        planes.append((row, (row + 3) & ~3, plane_height))
    return planes


def unpadded(data, planes):
    """The planes' samples without the row padding, frame after frame: what libavcodec's
    `-f rawvideo` writes, which the manifest's MD5 is of. Returns (bytes, whole frames)."""
    frame_size = sum(stride * rows for _, stride, rows in planes)
    out = bytearray()
    frames = len(data) // frame_size
    for index in range(frames):
        offset = index * frame_size
        for row_bytes, stride, rows in planes:
            for row in range(rows):
                start = offset + row * stride
                out += data[start:start + row_bytes]
            offset += stride * rows
    return bytes(out), frames


@dataclasses.dataclass
class DecodedStream:
    md5: str
    frames: int
    result: object   # the PipelineResult


def decode_to_planes(runner, path, row, parser, work, decoder="vtdec name=dec verify-picture-hash=true"):
    """`path` through `filesrc ! parser ! decoder` in the manifest's format; the MD5 of its planes."""
    fmt, bps, sub_x, sub_y = FORMATS[row["pix_fmt"]]
    label = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{path.name}-{parser}-{decoder.split()[0]}")
    output = Path(work) / f"{label}.yuv"
    result = runner(f"filesrc location={path} ! {parser} ! {decoder} ! video/x-raw,format={fmt} "
                    f"! filesink location={output}", timeout=300, expect="eos")
    data = output.read_bytes() if output.is_file() else b""
    planes, frames = unpadded(data, planes_per_frame(int(row["width"]), int(row["height"]), bps, sub_x, sub_y))
    return DecodedStream(hashlib.md5(planes).hexdigest(), frames, result)


def frames_in(path, width, height, bytes_per_frame_of=lambda w, h: w * h * 3 // 2):
    return Path(path).stat().st_size // bytes_per_frame_of(width, height) if Path(path).is_file() else 0


def vtdec_output_format(env, description):
    """The format vtdec's source pad negotiates in `description ! fakesink` (gst-launch-1.0 -v: GI
    cannot read every field of raw video caps)."""
    import re
    result = subprocess.run(["gst-launch-1.0", "-v", *description.split(), "!", "fakesink"], env=env,
                            capture_output=True, text=True, timeout=120)
    found = re.search(r"SwiftVTDec:\w+\.GstPad:src: caps = video/x-raw, format=\(string\)(\w+)", result.stdout)
    return found.group(1) if found else None


def vtdec_warnings(result, element="dec"):
    return [w for w in result.warnings if w["element"] == element]


def gst_launch_raw(env, description, timeout=300):
    """gst-launch-1.0 -q DESCRIPTION ! fdsink: the raw bytes (for peer pipelines that must succeed)."""
    return subprocess.run(["gst-launch-1.0", "-q", *description.split(), "!", "fdsink"], env=env, capture_output=True,
                          timeout=timeout).stdout


__all__ = ["PARSERS", "FORMATS", "FIELD_STREAM", "SYSTEM_PYTHON", "element_available", "planes_per_frame", "unpadded",
           "decode_to_planes", "frames_in", "vtdec_output_format", "vtdec_warnings", "gst_launch_raw", "DecodedStream"]
