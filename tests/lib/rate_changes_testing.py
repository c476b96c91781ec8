"""Helpers of the encoder rate-control suite (tests/encoder_rate_changes/; fixtures in its
conftest.py): runs of tests/encoder_rate_changes/encoder_rate_changes.py (properties set at an exact
input frame from a pad probe, every output buffer's size) read into `Encoded`, the rates and
one-second windows computed from them, and FFmpeg's view of a written stream."""
import dataclasses
import re
import subprocess
from pathlib import Path

from swiftvt_testing import ROOT, SYSTEM_PYTHON

HELPER = ROOT / "tests" / "encoder_rate_changes" / "encoder_rate_changes.py"
LIMIT = 125000  # bytes per second, the data-rate-limits of rows 5 and 6
SMALL = "videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"


def ended_by_eos(run):
    """`run` (an Encoded), once it is sure it reached EOS."""
    assert run.status == 0 and run.ended == "eos", f"the pipeline did not reach EOS: {run.describe()}"
    return run


def one_warning(run, pattern, element="enc"):
    """Exactly one WARNING from `element`, saying `pattern` (a regular expression)."""
    ours = run.warnings_from(element)
    assert len(ours) == 1 and re.search(pattern, ours[0]), f"WARNINGs from {element}: {ours}"


@dataclasses.dataclass
class Encoded:
    status: int
    ended: str                # eos, error, timeout
    frames: list              # (pts_ns, size, key) in output (decode) order
    warnings: list            # (element, text)
    errors: list
    stderr: str
    params: Path = None       # the software VA driver's parameter log (SWIFTVT_VA_PARAMLOG)

    def describe(self):
        return f"ended {self.ended}, errors {self.errors}: {self.stderr[-600:]}"

    def measure(self, start):
        """`Rates` with the frames shown before / from display index `start`."""
        return Rates.of(self.frames, start)

    def warnings_from(self, element="enc"):
        return [text for source, text in self.warnings if source == element]

    def configs(self):
        """The rate-control modes of the configs the VA driver was given, in order ("rc=cqp rc=vbr")."""
        lines = self.params.read_text().splitlines() if self.params and self.params.is_file() else []
        return " ".join(m.group(0) for line in lines if line.startswith("encconfig")
                        for m in [re.search(r"rc=[a-z]*", line)] if m)

    def param_lines(self, prefix):
        lines = self.params.read_text().splitlines() if self.params and self.params.is_file() else []
        return [line for line in lines if line.startswith(prefix)]


@dataclasses.dataclass
class Rates:
    before: int        # kbit/s of the frames shown before the change
    after: int         # ...and from it on
    max_window: int    # the largest 30-frame window (decode order) of the whole stream, bytes
    max_after: int     # ...of the windows whose frames are all from the change on
    over: int          # windows over 1.05 x LIMIT
    windows: int

    @classmethod
    def of(cls, frames, start):
        """Display indices from the time stamps (rounded to the mean frame duration), sizes in decode order."""
        pts = [f[0] for f in frames]
        sizes = [f[1] for f in frames]
        first, last, n = min(pts), max(pts), len(frames)
        duration = (last - first) / (n - 1)
        index = [int((p - first) / duration + 0.5) for p in pts]
        before = [s for s, i in zip(sizes, index) if i < start]
        after = [s for s, i in zip(sizes, index) if i >= start]
        max_window = max_after = over = windows = 0
        for i in range(n - 29):
            total = sum(sizes[i:i + 30])
            windows += 1
            max_window = max(max_window, total)
            if all(k >= start for k in index[i:i + 30]):
                max_after = max(max_after, total)
            if total > LIMIT * 1.05:
                over += 1
        rate = lambda part: int(sum(part) * 8 * 30 / len(part) / 1000) if part else 0  # noqa: E731
        return cls(rate(before), rate(after), max_window, max_after, over, windows)


def encode(env, source, encoder, changes=(), output=None, params=None, timeout=240):
    """Runs SOURCE ! ENCODER (named enc) with `changes` [(frame, "name=value", ...)] applied at
    those input frames; `output` writes the byte-stream; `params` collects the VA driver's log."""
    command = [SYSTEM_PYTHON, str(HELPER), source, encoder]
    for frame, *assignments in changes:
        command += ["--at", str(frame), *assignments]
    if output:
        command += ["--output", str(output)]
    command += ["--timeout", str(timeout)]
    if params:
        Path(params).unlink(missing_ok=True)
        env = dict(env, SWIFTVT_VA_PARAMLOG=str(params))
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout + 60)
    frames, warnings, errors, ended = [], [], [], "none"
    for line in result.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "frame":
            pts, size, key = rest.split()
            frames.append((int(pts), int(size), key == "1"))
        elif kind in ("warning", "error"):
            source_name, _, text = rest.partition(": ")
            (warnings if kind == "warning" else errors).append((source_name, text))
        elif kind == "end":
            ended = rest
    return Encoded(result.returncode, ended, frames, warnings, errors, result.stderr, Path(params) if params else None)


def ffmpeg_decode(env, path):
    """(FFmpeg's error messages, the frames it decodes, the display indices of the key frames)."""
    errors = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "null", "-"], env=env,
                            capture_output=True, text=True, timeout=300).stderr.strip()
    frames = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames",
                             "-of", "csv=p=0", str(path)], env=env, capture_output=True, text=True,
                            timeout=300).stdout.strip()
    keys = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "frame=key_frame", "-of", "csv=p=0", str(path)],
                          env=env, capture_output=True, text=True, timeout=300).stdout.splitlines()
    return errors, int(frames) if frames.isdigit() else None, [i for i, key in enumerate(keys) if key.strip() == "1"]


def idr_pic_ids(env, path):
    """The idr_pic_id of every IDR slice header FFmpeg's trace_headers shows, in order."""
    trace = subprocess.run(["ffmpeg", "-v", "trace", "-i", str(path), "-c", "copy", "-bsf:v", "trace_headers",
                            "-f", "null", "-"], env=env, capture_output=True, text=True, timeout=300).stderr
    return [line.split()[-1] for line in trace.splitlines() if re.search(r"\bidr_pic_id\b", line)]
