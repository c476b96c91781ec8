"""What the tests of VA clients on SwiftVT's software VA driver share (tests/va_encode_ffmpeg/,
tests/vtenc_va/): the driver's report and parameter log as data, FFmpeg's h264_vaapi as a client,
and decoding a stream back to compare it with its source.

- `DriverLog(path)`: a SWIFTVT_VA_REPORT or SWIFTVT_VA_PARAMLOG file (tests/va-driver/README.md):
  `count(regex)`, `first(regex)`, `lines(regex)`; for a report, `leaks()` (the live-objects lines
  that are not all zero) and `terminated()` (a vaTerminate happened);
- `ClientRun`: one client run (exit status, 124 when it hung; its stderr; the driver's logs);
- `ffmpeg_vaapi_encode(env, work, name, size, source, *options, ...)`: h264_vaapi through the driver;
- `md5_of(path)`, `ffmpeg_decode(path, out)`, `avdec_decode(env, path, out)`, `first_sps(path)`,
  `trace_header_field(env, path, field)`;
- for an encoder's run (an object with `.report`, a DriverLog): `clean(run)`, `driver_complaint(run)`;
  and `decoded_md5(env, path)`, `key_frames(env, path)`, `frame_count(env, path)`,
  `expected_key_frames(frames, interval, forced)`.
"""
import dataclasses
import hashlib
import os
import re
import subprocess
from pathlib import Path

# The driver personality the whole run is under (SWIFTVT_VA_PERSONALITY, read at vaInitialize):
# "" (the driver as it is), ihd, mesa or nvdec; what differs is expected accordingly.
PERSONALITY = os.environ.get("SWIFTVT_VA_PERSONALITY", "")
ZERO_OBJECTS = "configs=0 contexts=0 surfaces=0 buffers=0 images=0"


class DriverLog:
    """A driver report (SWIFTVT_VA_REPORT) or parameter log (SWIFTVT_VA_PARAMLOG); empty when the
    file is missing (a run that never opened the driver)."""

    def __init__(self, path):
        self.path = Path(path)
        self.text = self.path.read_text(errors="replace") if self.path.exists() else ""

    def lines(self, pattern=""):
        return [line for line in self.text.splitlines() if re.search(pattern, line)]

    def count(self, pattern):
        return len(self.lines(pattern))

    def first(self, pattern):
        found = self.lines(pattern)
        return found[0] if found else None

    def leaks(self):
        """The live-objects lines (one per vaTerminate) that are not all zero."""
        return [line for line in self.lines("^live-objects") if ZERO_OBJECTS not in line]

    def terminated(self):
        return self.count("^live-objects") > 0

    def __repr__(self):
        return f"{self.path.name}:\n{self.text[-2000:]}"


@dataclasses.dataclass
class ClientRun:
    status: int          # exit status; 124 when the run hung and was killed
    log: str             # stderr (and stdout)
    output: Path
    report: DriverLog
    params: DriverLog

    @property
    def hung(self):
        return self.status == 124


def driver_env(env, work, name, **variables):
    """`env` with the driver's report and parameter log for run NAME in `work`, and `variables`."""
    report, params = Path(work) / f"{name}.report", Path(work) / f"{name}.params"
    for path in (report, params):
        path.unlink(missing_ok=True)
    return dict(env, SWIFTVT_VA_REPORT=str(report), SWIFTVT_VA_PARAMLOG=str(params),
                **{k: str(v) for k, v in variables.items()}), report, params


def run_client(command, env, output, report, params, timeout):
    try:
        completed = subprocess.run([str(c) for c in command], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                   text=True, errors="replace", timeout=timeout)
        status, log = completed.returncode, completed.stderr + completed.stdout
    except subprocess.TimeoutExpired as expired:
        status, log = 124, ((expired.stderr or b"").decode(errors="replace") if isinstance(expired.stderr, bytes)
                            else (expired.stderr or ""))
    return ClientRun(status, log, Path(output), DriverLog(report), DriverLog(params))


def ffmpeg_vaapi_encode(env, work, name, size, source, *options, rate=30, timeout=120, **variables):
    """FFmpeg's h264_vaapi through the driver (DISPLAY in `env`): raw I420 `source` of `size`
    (WxH) at `rate` to WORK/NAME.h264 (Annex B), with `variables` (SWIFTVT_VA_...) for the driver."""
    run_env, report, params = driver_env(env, work, name, **variables)
    output = Path(work) / f"{name}.h264"
    command = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "warning", "-y",
               "-init_hw_device", f"vaapi=va:{env['DISPLAY']},connection_type=x11", "-filter_hw_device", "va",
               "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", size, "-r", rate, "-i", source,
               "-vf", "format=nv12,hwupload", "-c:v", "h264_vaapi", *options, "-f", "h264", output]
    return run_client(command, run_env, output, report, params, timeout)


def md5_of(path):
    """MD5 of a file's content; None when it is missing."""
    path = Path(path)
    return hashlib.md5(path.read_bytes()).hexdigest() if path.exists() else None


def ffmpeg_decode(env, path, out):
    """FFmpeg's h264 decoder on `path` to raw yuv420p `out`; `out` is missing when nothing decoded."""
    Path(out).unlink(missing_ok=True)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "yuv420p",
                    str(out), "-y"], env=env, capture_output=True, timeout=120)
    return Path(out)


def avdec_decode(env, path, out, demux=""):
    """GStreamer's h264parse ! avdec_h264 on `path` (Annex B, or MP4 with demux="qtdemux") to raw
    I420 `out`; None when the file is empty (h264parse's early ERROR would make gst-launch wait)."""
    path, out = Path(path), Path(out)
    out.unlink(missing_ok=True)
    if not path.exists() or path.stat().st_size == 0:
        return None
    chain = ["filesrc", f"location={path}", "!"] + ([demux, "!"] if demux else [])
    subprocess.run(["gst-launch-1.0", "-q", *chain, "h264parse", "!", "avdec_h264", "!", "video/x-raw,format=I420", "!",
                    "filesink", f"location={out}"], env=env, capture_output=True, timeout=120)
    return out


def first_sps(path):
    """The first SPS NAL unit of an Annex B stream, as hex; None when there is none."""
    data = Path(path).read_bytes() if Path(path).exists() else b""
    units = [u.lstrip(b"\x00") for u in data.split(b"\x00\x00\x01")]
    return next((u.hex() for u in units if u and u[0] & 0x1f == 7), None)


def trace_header_field(env, path, field):
    """The first value FFmpeg's trace_headers bitstream filter prints for `field` (an int), or None."""
    completed = subprocess.run(["ffmpeg", "-nostdin", "-v", "trace", "-i", str(path), "-c", "copy", "-bsf:v",
                                "trace_headers", "-f", "null", "-"], env=env, capture_output=True, text=True,
                               errors="replace", timeout=120)
    found = re.search(rf"{field}\s.*?=\s*(-?\d+)", completed.stderr)
    return int(found.group(1)) if found else None


# -- vtenc's and vtmultipasssink's coded streams (tests/vtenc_va/) ---------------------------------

def decoded_md5(env, path, demux=()):
    """MD5 of the I420 frames avdec_h264 decodes from `path` (Annex B, or MP4 with demux=("qtdemux",));
    None for a missing or empty file (h264parse's early ERROR would make gst-launch wait)."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return None
    chain = ["filesrc", f"location={path}", "!", *demux, *(["!"] if demux else []), "h264parse", "!", "avdec_h264",
             "!", "video/x-raw,format=I420", "!", "fdsink", "fd=1"]
    completed = subprocess.run(["gst-launch-1.0", "-q", *chain], env=env, capture_output=True, timeout=120)
    return hashlib.md5(completed.stdout).hexdigest() if completed.returncode == 0 else None


def key_frames(env, path):
    """Display-order indices of the key frames of `path`, as ffprobe decodes them."""
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "frame=key_frame", "-of", "csv=p=0", str(path)],
                         env=env, capture_output=True, text=True, timeout=120).stdout
    return [index for index, flag in enumerate(out.split()) if flag.strip(",") == "1"]


def frame_count(env, path):
    """Frames ffprobe decodes from `path`; 0 for a missing or empty file."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return 0
    completed = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                                "stream=nb_read_frames", "-of", "csv=p=0", str(path)], env=env, capture_output=True,
                               text=True, timeout=120)
    return int(completed.stdout.strip() or 0) if completed.returncode == 0 else 0


def expected_key_frames(frames, interval, forced=()):
    """Where the key frames must be: the first, each forced one, and one whenever `interval` frames
    have passed since the last (the interval counts from the last key frame, forced ones included)."""
    keys, last = [0], 0
    for index in range(1, frames):
        if index in forced or (interval > 0 and index - last >= interval):
            keys.append(index)
            last = index
    return keys


def clean(encoded):
    """The driver validated every call (no VALIDATION line), nothing leaked, vaTerminate happened
    (`encoded`: a run with a driver `.report`, or the DriverLog itself)."""
    report = getattr(encoded, "report", encoded)
    return report.count("VALIDATION") == 0 and not report.leaks() and report.terminated()


def driver_complaint(encoded):
    return getattr(encoded, "report", encoded).first("VALIDATION|live-objects") or "(no report)"
