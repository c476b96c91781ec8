#!/usr/bin/env python3
"""Compares the H.264 decode parameters two VA-API clients gave a driver, from libva's own trace
(LIBVA_TRACE=PREFIX writes one file per thread, PREFIX.<time>.thd-<id>).

    va-trace-compare.py SWIFTVT_PREFIX FFMPEG_PREFIX

For each client, every thread's file is read, the lines sorted by libva's time stamp (a client may
submit from several threads), and the picture, IQ matrix and slice parameter buffers kept. What
legitimately differs between two correct clients is dropped: time stamps, context and buffer IDs,
and surface IDs (each client allocates and reuses its own surfaces). The pictures are then
compared in decoding order. Prints one line: how many pictures are identical, and the first
difference; exits 1 when any picture differs or a trace is missing."""
import glob
import re
import sys

KEPT_BUFFERS = ("VAPictureParameterBufferH264", "VAIQMatrixBufferH264", "VASliceParameterBufferH264")
PREFIX = re.compile(r"^\[(\d+\.\d+)\]\[ctx [^\]]*\]\t?")
SURFACE = re.compile(r"0x0*[0-9a-fA-F]+")


POC_ENTRY = re.compile(r"^(-?\d+)-(-?\d+)-(.*)$")
POC_FIELD = re.compile(r"^(CurrPic\.(?:Top|Bottom)FieldOrderCnt) = (-?\d+)$")


def relative_pocs(lines):
    """POCs relative to the current picture's: FFmpeg's trace shows them 65536 higher than the
    stream's (an offset it adds internally), and only differences matter to a decoder (8.4.1.2.3
    and 8.4.2.3 use POC distances). CurrPic.flags keeps only its field bits: FFmpeg leaves the
    current picture's reference bits 0, GStreamer and SwiftVT set them; drivers read the
    reference state from ReferenceFrames."""
    base = None
    for line in lines:
        match = POC_FIELD.match(line)
        if match and match.group(1).endswith("TopFieldOrderCnt"):
            base = int(match.group(2))
            break
    if base is None:
        return lines
    result = []
    unused_weights = False
    for line in lines:
        # A list's weight rows under a flag of 0 are not used (FFmpeg fills defaults even for a
        # P slice's list 1; SwiftVT fills the active entries only).
        if "_weight_l" in line and "_flag = " in line:
            unused_weights = line.endswith("= 0")
        elif "=" in line:
            unused_weights = False
        elif unused_weights:
            continue
        field = POC_FIELD.match(line)
        entry = POC_ENTRY.match(line)
        if field:
            line = f"{field.group(1)} = {int(field.group(2)) - base}"
        elif entry:
            line = f"{int(entry.group(1)) - base}-{int(entry.group(2)) - base}-{entry.group(3)}"
        elif line.startswith("CurrPic.flags = "):
            line = "CurrPic.flags = " + hex(int(line.split("= ")[1], 16) & 0x3)
        result.append(line)
    return result


def pictures(prefix):
    """The normalised parameter lines of each picture, in decoding order."""
    entries = []
    for path in sorted(glob.glob(prefix + ".*")):
        time = 0.0
        for order, raw in enumerate(open(path, errors="replace")):
            match = PREFIX.match(raw)
            if match:
                time = float(match.group(1))
            entries.append((time, path, order, PREFIX.sub("", raw.rstrip("\n"))))
    entries.sort()
    result = []
    current = None
    keeping = False
    for _, _, _, line in entries:
        if line.startswith("==========va_TraceBeginPicture"):
            current = []
            result.append(current)
        if line.startswith("--"):
            keeping = line[2:].strip() in KEPT_BUFFERS
            continue
        if line.startswith("-----") or line.startswith("=========") or "buffers[" in line:
            keeping = False
            continue
        if keeping and current is not None and line.strip():
            # Surface IDs (picture_id and the lists' entries) are each client's own.
            if "picture_id" in line or re.match(r"^\s*-?[0-9a-f]{8}-", line.strip()):
                line = SURFACE.sub("surface", line)
            current.append(line.strip())
    return [sorted_reference_frames(relative_pocs(p)) for p in result if p]


def sorted_reference_frames(lines):
    """ReferenceFrames is a set (drivers find entries by surface and frame_idx; va.h orders
    nothing): its entries sorted, so that two clients listing the DPB in different orders
    compare equal. RefPicList0/1 keep their order, which is the slice's."""
    result = []
    index = 0
    while index < len(lines):
        result.append(lines[index])
        if lines[index].startswith("ReferenceFrames"):
            end = index + 1
            while end < len(lines) and POC_ENTRY.match(lines[end]):
                end += 1
            result += sorted(lines[index + 1:end])
            index = end
            continue
        index += 1
    return result


def main(ours, theirs):
    a, b = pictures(ours), pictures(theirs)
    if not a or not b:
        print(f"no decode parameters in the trace ({len(a)} pictures from {ours}.*, {len(b)} from {theirs}.*)")
        return 1
    same = sum(1 for x, y in zip(a, b) if x == y)
    line = f"{same} of {max(len(a), len(b))} pictures' parameters identical (SwiftVT {len(a)}, FFmpeg {len(b)})"
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            for left, right in zip(x + [""] * len(y), y + [""] * len(x)):
                if left != right:
                    line += f"; first difference, picture {index}: SwiftVT '{left}', FFmpeg '{right}'"
                    break
            break
    print(line)
    return 0 if same == len(a) == len(b) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
