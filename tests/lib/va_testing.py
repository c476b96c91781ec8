"""What the tests on SwiftVT's software VA driver share (tests/va_driver_ffmpeg, tests/vtdec_va):
the corpus manifest, the streams damaged on purpose, the driver's report ($SWIFTVT_VA_REPORT, see
tests/va-driver/README.md) as data, and FFmpeg's VA-API client. The same facts for bash are in
tests/lib/va-report.sh (scripts/hw-check.sh)."""
import dataclasses
import hashlib
import re
import subprocess
from pathlib import Path

from swiftvt_testing import corpus_root

# The corpus streams that are damaged (or not decodable base-layer H.264) on purpose.
DAMAGED_STREAMS = {"BA_MW_D_IDR_LOST.264", "Error_I_P.264", "sps_subsetsps_bothVUI.264"}


@dataclasses.dataclass
class Stream:
    name: str
    path: Path
    width: int
    height: int
    frames: int
    ref_md5: str

    @property
    def frame_size(self):
        """Bytes of one I420 frame (chroma rounded up, as MANIFEST.tsv's MD5s are made)."""
        return self.width * self.height + 2 * ((self.width + 1) // 2) * ((self.height + 1) // 2)


def read_manifest(root=None):
    """{name: Stream} of h264/MANIFEST.tsv ({} without the corpus)."""
    root = Path(root or corpus_root())
    manifest = root / "h264" / "MANIFEST.tsv"
    if not manifest.is_file():
        return {}
    streams = {}
    for line in manifest.read_text().splitlines()[1:]:
        name, _bytes, _sha, width, height, _profile, frames, ref_md5 = line.split("\t")[:8]
        streams[name] = Stream(name, root / "h264" / name, int(width), int(height), int(frames), ref_md5)
    return streams


def corpus_stream_names():
    """The names to parametrize a per-stream test with, read when the module is collected; one
    placeholder without the corpus, so that the test runs and its fixture reports the corpus missing
    (a skip, or a failure under SWIFTVT_REQUIRE_TEST_INPUTS) instead of an empty parameter set."""
    return sorted(read_manifest()) or ["(no corpus)"]


class Report:
    """The driver's report file: one line per event, a live-objects line at each vaTerminate."""

    def __init__(self, path):
        path = Path(path)
        self.lines = path.read_text(errors="replace").splitlines() if path.is_file() else []

    def count(self, pattern):
        return sum(1 for line in self.lines if re.search(pattern, line))

    def first(self, pattern):
        return next((line for line in self.lines if re.search(pattern, line)), None)

    @property
    def terminated(self):
        """How many displays were terminated (vaTerminate)."""
        return self.count("^live-objects")

    @property
    def leaks(self):
        """The live-objects lines that are not all zero."""
        return [line for line in self.lines if line.startswith("live-objects")
                and "configs=0 contexts=0 surfaces=0 buffers=0 images=0" not in line]

    @property
    def refused(self):
        """The driver's reason for refusing the stream, or None."""
        line = self.first("REFUSED")
        return line.split("REFUSED: ", 1)[-1].split(":")[0] if line else None

    def image_reads(self):
        """(vaDeriveImage, vaGetImage) calls summed over the image-reads lines (one per display)."""
        derived = copied = 0
        for line in self.lines:
            if line.startswith("image-reads"):
                derived += int(re.search(r"derived=(\d+)", line).group(1))
                copied += int(re.search(r"copied=(\d+)", line).group(1))
        return derived, copied


def md5_of(path):
    path = Path(path)
    if not path.is_file():
        return None
    digest = hashlib.md5()
    with path.open("rb") as data:
        for chunk in iter(lambda: data.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def frames_in(path, frame_size):
    path = Path(path)
    return path.stat().st_size // frame_size if path.is_file() else 0


def ffmpeg_has_libx264(env):
    encoders = subprocess.run(["ffmpeg", "-hide_banner", "-encoders"], env=env, capture_output=True, text=True)
    return "libx264" in encoders.stdout


def field_order_and_pix_fmt(stream, env):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "stream=pix_fmt,field_order", "-of", "csv=p=0", str(stream)], env=env,
                         capture_output=True, text=True, timeout=60).stdout.strip()
    pix_fmt, _, field_order = out.partition(",")
    return field_order, pix_fmt


def raw_md5(stream, env, *input_options):
    """The MD5 of libavcodec's own yuv420p decoding of `stream`."""
    out = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", *input_options, "-i", str(stream), "-f", "rawvideo",
                          "-pix_fmt", "yuv420p", "-"], env=env, capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-2000:]
    return hashlib.md5(out.stdout).hexdigest()


@dataclasses.dataclass
class Run:
    status: int   # the exit status; 124 when it ran past its time limit
    log: str      # stderr (and stdout where merged)
    report: Report
    seconds: float = 0.0


def ffmpeg_va_command(display, stream, *options, pix_fmt="yuv420p", output="/dev/null", download=True):
    """FFmpeg's VA-API client on `display`. allow_profile_mismatch lets FFmpeg try plain Baseline
    streams on the Constrained Baseline profile (what VA drivers offer). With `download`, frames are
    read back with hwdownload into `pix_fmt` raw video."""
    command = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-init_hw_device",
               f"vaapi=va:{display},connection_type=x11", "-hwaccel", "vaapi", "-hwaccel_device", "va",
               "-hwaccel_output_format", "vaapi", "-hwaccel_flags", "allow_profile_mismatch", "-i", str(stream),
               *options]
    if download:
        return command + ["-vf", "hwdownload,format=nv12", "-pix_fmt", pix_fmt, "-f", "rawvideo", "-y", str(output)]
    return command + ["-f", "null", "-"]


def run_command(command, env, timeout=300, report=None):
    """Runs `command` under `timeout` (status 124 when it runs past it, like timeout(1)); the
    driver's report read from `report` afterwards."""
    import time
    started = time.monotonic()
    try:
        completed = subprocess.run([str(c) for c in command], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, timeout=timeout)
        status, log = completed.returncode, completed.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as expired:
        status, log = 124, (expired.stderr or b"").decode(errors="replace")
    return Run(status, log, Report(report) if report else Report("/nonexistent"), time.monotonic() - started)
