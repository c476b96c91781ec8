"""Helpers of the encoder formats suite (tests/encoder_formats/; fixtures in its conftest.py): the
access unit delimiters of an H.264 stream, the MD5 of raw frames without their rows' padding, and
PSNR-Y of a decoded stream against its raw source."""
import hashlib
import re
import subprocess
from pathlib import Path

# Table 7-5: slice_type % 5 (P 0, B 1, I 2, SP 3, SI 4) allowed by each primary_pic_type.
ALLOWED = {0: {2}, 1: {2, 0}, 2: {2, 0, 1}, 3: {4}, 4: {4, 3}, 5: {2, 4}, 6: {2, 4, 0, 3}, 7: {0, 1, 2, 3, 4}}


def nal_units(data, form):
    if form == "avc":
        units, i = [], 0
        while i + 4 <= len(data):
            n = int.from_bytes(data[i:i + 4], "big")
            units.append(data[i + 4:i + 4 + n])
            i += 4 + n
        return units
    starts = [m.end() for m in re.finditer(b"\x00\x00\x01", data)]
    return [data[s:(starts[k + 1] - 3 if k + 1 < len(starts) else len(data))].rstrip(b"\x00")
            for k, s in enumerate(starts)]


def ue(bits, pos):
    zeros = 0
    while bits[pos] == "0":
        zeros += 1
        pos += 1
    return int(bits[pos:pos + zeros + 1], 2) - 1, pos + zeros + 1


def aud_report(path, form):
    """(access units (pictures), AUDs (nal_unit_type 9, 7.3.2.4), access units that do not start with
    exactly one AUD whose primary_pic_type allows their slices) of a byte-stream or avc file."""
    aus = auds = bad = 0
    current = None  # [primary_pic_type or None, AUDs, slice types, pictures]

    def close(au):
        nonlocal bad
        if au is not None and (au[0] is None or au[1] != 1 or au[3] != 1 or not au[2] <= ALLOWED[au[0]]):
            bad += 1
    for unit in nal_units(Path(path).read_bytes(), form):
        if not unit:
            continue
        kind = unit[0] & 31
        if kind == 9:
            auds += 1
            if current is not None and current[3] > 0:
                close(current)
                current = None
            if current is None:
                current = [unit[1] >> 5, 1, set(), 0]
            else:
                current[1] += 1
        elif kind in (1, 5):
            rbsp = unit[1:24].replace(b"\x00\x00\x03", b"\x00\x00")
            bits = "".join(f"{b:08b}" for b in rbsp)
            first_mb, pos = ue(bits, 0)
            slice_type, _ = ue(bits, pos)
            if first_mb == 0:
                aus += 1
                if current is None or current[3] > 0:  # a picture without an AUD of its own
                    close(current)
                    current = [None, 0, set(), 0]
                current[3] += 1
            current[2].add(slice_type % 5)
    close(current)
    return aus, auds, bad


SUBSAMPLING = {"I420": (1, 1), "I420_10LE": (1, 1), "Y42B": (1, 0), "I422_10LE": (1, 0),
               "Y444": (0, 0), "Y444_10LE": (0, 0)}


def visible_md5(path, name, width, height):
    """The MD5 of the picture samples of raw frames in GStreamer's default layout, without the rows'
    padding (its bytes are whatever the writer's memory held: they differ between two decoders of
    the same pictures, and between runs); "missing" without a file."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return "missing"
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import Gst, GstVideo
    Gst.init(None)
    info = GstVideo.VideoInfo.new()
    info.set_format(GstVideo.VideoFormat.from_string(name), width, height)
    sample_bytes = 2 if name.endswith("10LE") else 1
    data = path.read_bytes()
    if len(data) % info.size:
        return f"size {len(data)} is not whole frames of {info.size}"
    digest = hashlib.md5()
    for frame in range(len(data) // info.size):
        base = frame * info.size
        for plane in range(3):
            x, y = (0, 0) if plane == 0 else SUBSAMPLING[name]
            row_bytes = ((width + (1 << x) - 1) >> x) * sample_bytes
            for row in range((height + (1 << y) - 1) >> y):
                start = base + info.offset[plane] + row * info.stride[plane]
                digest.update(data[start:start + row_bytes])
    return digest.hexdigest()


def psnr_y(env, stream, raw, pixfmt, size="160x120"):
    """PSNR-Y (a string: dB or "inf") of the decoded STREAM against the RAW source, both read as raw
    frames so that frames pair by position, not by time stamp; "" when FFmpeg says none."""
    decoded = f"{stream}.decoded.yuv"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(stream), "-f", "rawvideo", "-pix_fmt", pixfmt, decoded],
                   env=env, capture_output=True, timeout=300)
    log = subprocess.run(["ffmpeg", "-v", "info", "-f", "rawvideo", "-pix_fmt", pixfmt, "-s", size, "-i", decoded, "-f",
                          "rawvideo", "-pix_fmt", pixfmt, "-s", size, "-i", str(raw), "-lavfi",
                          "psnr", "-f", "null", "-"],
                         env=env, capture_output=True, text=True, timeout=300).stderr
    found = re.findall(r"PSNR y:([0-9.a-z]*) ", log)
    return found[-1] if found else ""
