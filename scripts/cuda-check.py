#!/usr/bin/env python3
"""SwiftVT's NVDEC path against GStreamer's own NVDEC decoder on the same CUDA device (issue 34):

  1. the registry: vtdec_hw's rank and sink caps, the reference decoder's rank;
  2. every undamaged corpus stream through `vtdec hardware=require hardware-device=cuda` and through
     the reference (`h264parse ! nvh264dec`), the MD5 of the decoded frames against MANIFEST.tsv's
     ref_md5;
  3. throughput on 1080p x20 and 720p x40 concatenations of the corpus's High streams: one pipeline
     (median of 3) and 8 in parallel, wall seconds, frames per second, CPU milliseconds per frame
     (user + system of the process), peak RSS, and vtdec's ratio to the reference (wall-time ratio
     for one pipeline, <= 1.00 is at least as fast; aggregate frames per second for 8, >= 1.00).

    scripts/cuda-check.py CORPUS_DIR [--launch gst-launch-1.0] [--inspect gst-inspect-1.0]
                          [--reference nvh264dec] [--quick] [--runs 3] [--parallel 8]

Run by scripts/hw-check.sh --cuda (a machine with an NVIDIA GPU and Debian's packages), by
scripts/hw-check.sh --cuda --software (the software CUDA double; its reference is nvh264sldec, as
the double has no NVIDIA parser for nvh264dec), and by check-cuda.sh in the bundle
scripts/make-gpu-bundle.sh makes for a GPU host without packages. Exits 1 when a vtdec decode is
not exact or a step failed. The environment (SWIFTVT's plugin on GST_PLUGIN_PATH, LD_LIBRARY_PATH)
is the caller's.
"""
import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DAMAGED = {"BA_MW_D_IDR_LOST.264", "Error_I_P.264", "sps_subsetsps_bothVUI.264"}


def decoded_md5(command, width, height, timeout=300):
    """Runs `command` (I420 frames on its stdout) and returns the MD5 over the visible samples of
    the frames as GStreamer lays them out (rows of each plane padded to 4 bytes), the frame count
    and stderr; "size-mismatch" when the output is not whole frames. The frames are read one at a
    time: this process stays small, so the peak RSS its children report is theirs (a child starts
    with its parent's high-water mark, which Linux keeps across exec)."""
    chroma_width, chroma_height = (width + 1) // 2, (height + 1) // 2
    luma_stride, chroma_stride = (width + 3) // 4 * 4, (chroma_width + 3) // 4 * 4
    frame_size = luma_stride * height + 2 * chroma_stride * chroma_height
    digest = hashlib.md5()
    count = 0
    leftover = 0
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(["timeout", str(timeout), *command], stdout=subprocess.PIPE, stderr=errors)
        while True:
            frame = process.stdout.read(frame_size)
            if len(frame) < frame_size:
                leftover = len(frame)
                break
            view = memoryview(frame)
            for row in range(height):
                digest.update(view[row * luma_stride:row * luma_stride + width])
            for plane in range(2):
                base = luma_stride * height + plane * chroma_stride * chroma_height
                for row in range(chroma_height):
                    digest.update(view[base + row * chroma_stride:base + row * chroma_stride + chroma_width])
            count += 1
        process.wait()
        errors.seek(0)
        text = errors.read().decode(errors="replace")
    return ("size-mismatch" if leftover else digest.hexdigest()), count, text


def pipelines(reference, source, output, convert_peer=False):
    """(vtdec's, the reference's) gst-launch descriptions from `source` into `output` caps; the
    reference through videoconvert when `convert_peer` (GStreamer's NVDEC decoders output NV12 only)."""
    vtdec = ["filesrc", f"location={source}", "!", "h264parse-to-avcc", "!", "vtdec", "hardware=require",
             "hardware-device=cuda", "!", *output]
    peer = ["filesrc", f"location={source}", "!", "h264parse", "!", reference, "!",
            *(["videoconvert", "!"] if convert_peer else []), *output]
    return vtdec, peer


def run_measured(commands, timeout=600):
    """Starts every command at once (each under coreutils' timeout: a hang ends as status 124);
    (wall seconds, [(status, user+system seconds, peak RSS KiB, stderr)]) when all have ended.
    wait4's usage covers the command too, as timeout waits for it."""
    started = time.monotonic()
    processes = [subprocess.Popen(["timeout", str(timeout), *command], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE) for command in commands]
    results = {}
    while len(results) < len(processes):
        pid, status, usage = os.wait4(-1, 0)
        for process in processes:
            if process.pid == pid:
                results[pid] = (os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
                                process.stderr.read().decode(errors="replace")[-300:])
    wall = time.monotonic() - started
    return wall, [results[process.pid] for process in processes]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--launch", default="gst-launch-1.0")
    parser.add_argument("--inspect", default="gst-inspect-1.0")
    parser.add_argument("--reference", default="nvh264dec")
    parser.add_argument("--quick", action="store_true", help="five streams, one run per speed figure")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=8)
    options = parser.parse_args()
    corpus = Path(options.corpus) / "h264"
    problems = []

    print("== registry")
    for element in ("vtdec_hw", options.reference):
        text = subprocess.run([options.inspect, element], capture_output=True, text=True, timeout=300).stdout
        lines = [line.strip() for line in text.splitlines() if "Rank" in line or "profile:" in line
                 or "Long-name" in line]
        print(f"{element}: " + (" | ".join(lines[:6]) or "not registered"))

    print(f"== corpus: MD5 of the decoded frames against ref_md5 (vtdec hardware=require | {options.reference})")
    manifest = [line.split("\t") for line in (corpus / "MANIFEST.tsv").read_text().splitlines()[1:]]
    frame_counts = {row[0]: int(row[6]) for row in manifest}
    rows = [row for row in manifest if row[0] not in DAMAGED]
    if options.quick:
        rows = rows[:5]
    exact = peer_exact = 0
    for name, _, _, width, height, profile, frames, reference_md5, *_ in rows:
        results = []
        for command in pipelines(options.reference, corpus / name, ["video/x-raw,format=I420", "!", "fdsink", "fd=1"],
                                 convert_peer=True):
            md5, count, errors = decoded_md5([options.launch, "-q", *command], int(width), int(height))
            results.append((md5 == reference_md5, count, errors))
        exact += results[0][0]
        peer_exact += results[1][0]
        verdicts = ["ok " if result[0] else "BAD" for result in results]
        print(f"{name:46} {profile:22} frames {frames:>4}  vtdec {verdicts[0]} ({results[0][1]})  "
              f"{options.reference} {verdicts[1]} ({results[1][1]})")
        if not results[0][0]:
            problems.append(f"{name}: vtdec not exact")
            print("   " + " | ".join(line for line in results[0][2].splitlines() if "ERROR" in line or "WARN" in line)
                  [:400])
    print(f"vtdec exact: {exact}/{len(rows)}   {options.reference} exact: {peer_exact}/{len(rows)}")

    print("== throughput (NV12 to fakesink)")
    with tempfile.TemporaryDirectory(prefix="swiftvt-cuda-check.") as work:
        measure_throughput(options, corpus, frame_counts, Path(work), problems)
    print(f"(this check's own peak RSS, the floor of every figure above: "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")
    print(f"== summary: vtdec exact {exact}/{len(rows)}; problems: {len(problems)}")
    for problem in problems:
        print(f"  PROBLEM: {problem}")
    return 1 if problems else 0


def measure_throughput(options, corpus, frame_counts, work, problems):
    """The throughput table: each decoder on each concatenation, one pipeline and several at once."""
    sources = []
    for name, copies in (("VID_1920x1080_cabac_temporal_direct.264", 20),
                         ("VID_1280x720_cabac_temporal_direct.264", 40)):
        path = corpus / name
        if not path.is_file():
            problems.append(f"{name} missing: no throughput figure")
            continue
        joined = work / f"{path.stem}.x{copies}.264"
        data = path.read_bytes()
        with joined.open("wb") as output:
            for _ in range(copies):
                output.write(data)
        sources.append((joined, frame_counts[name] * copies))
    runs = 1 if options.quick else options.runs
    print(f"{'stream':38} {'decoder':10} {'pipelines':>9} {'wall s':>8} {'frames/s':>9} {'CPU ms/frame':>12} "
          f"{'peak RSS MiB':>12} {'ratio':>6}")
    for source, frames in sources:
        for count in (1, options.parallel):
            figures = {}
            for label, command in zip(("vtdec", options.reference),
                                      pipelines(options.reference, source, ["video/x-raw,format=NV12", "!",
                                                                            "fakesink"])):
                measured = [run_measured([[options.launch, "-q", *command]] * count) for _ in range(runs)]
                wall, results = sorted(measured, key=lambda m: m[0])[len(measured) // 2]
                failed = [result for result in results if result[0] != 0]
                if failed:
                    problems.append(f"{label} on {source.name} x{count} failed: {failed[0][3]}")
                cpu = sum(result[1] for result in results) / (frames * count) * 1000
                rss = max(result[2] for result in results) / 1024
                figures[label] = (wall, frames * count / wall, cpu, rss)
            ratio_label = "wall" if count == 1 else "fps"
            ratio = (figures["vtdec"][0] / figures[options.reference][0] if count == 1
                     else figures["vtdec"][1] / figures[options.reference][1])
            for label, (wall, fps, cpu, rss) in figures.items():
                shown = f"{ratio:.2f} {ratio_label}" if label == "vtdec" else ""
                print(f"{source.name:38} {label:10} {count:>9} {wall:>8.2f} {fps:>9.0f} {cpu:>12.2f} {rss:>12.0f} "
                      f"{shown:>6}")


if __name__ == "__main__":
    sys.exit(main())
