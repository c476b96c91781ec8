"""vtmultipasssink's test helpers (tests/multipass_sink/; fixtures in its conftest.py)."""
import dataclasses
import re
import subprocess

import pytest

from swiftvt_testing import run

WIDTH, HEIGHT, RATE = 1280, 720, 30
FRAME_BYTES = WIDTH * HEIGHT * 3 // 2
SOURCE_CAPS = ["rawvideoparse", f"width={WIDTH}", f"height={HEIGHT}", "format=i420", f"framerate={RATE}/1"]


def source(path):
    """filesrc of a raw I420 720p clip, parsed."""
    return ["filesrc", f"location={path}", "!", *SOURCE_CAPS]


@dataclasses.dataclass
class Launched:
    """A multi-pass run of the 720p clip into `output`, as gst-launch-1.0 -m ended it."""
    status: int
    log: str
    output: object

    def written(self):
        """The file, once the run is known to have succeeded."""
        assert self.status == 0, f"the multi-pass pipeline failed:\n{self.log[-3000:]}"
        return self.output


def launch_multipass(env, clip, output, *properties, timeout=300):
    """vtmultipasssink location=OUTPUT bitrate=1000 PROPERTIES... on the raw 720p `clip`."""
    status, log = launch(env, *source(clip), "!", "vtmultipasssink", f"location={output}", "bitrate=1000",
                         *properties, check=False, timeout=timeout)
    return Launched(status, log, output)


def launch(env, *description, timeout=300, messages=True, extra=(), stdin=None, check=True):
    """gst-launch-1.0 (-m: the bus messages printed) as users run it: (exit status, output)."""
    command = ["gst-launch-1.0", *(["-m"] if messages else []), *extra, *map(str, description)]
    try:
        result = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=timeout, stdin=stdin)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"gst-launch-1.0 did not finish in {timeout} s: {str(expired.output or '')[-2000:]}")
    if check:
        assert result.returncode == 0, f"gst-launch-1.0 failed ({result.returncode}):\n{result.stdout[-3000:]}"
    return result.returncode, result.stdout


def kbps(env, path, seconds=10):
    """Bits of the video samples (what the container stores) over `seconds`, in kbit/s."""
    sizes = run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=size", "-of", "csv=p=0",
                 path], env).split()
    return sum(int(s) for s in sizes) * 8 / seconds / 1000


def read_frames(env, path):
    """The frames FFmpeg decodes from `path` (ffprobe -count_frames)."""
    return run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries",
                "stream=nb_read_frames", "-of", "csv=p=0", path], env).strip()


def psnr_y(env, path, clip):
    """Mean PSNR-Y of `path`'s frames against the raw 720p `clip`."""
    result = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-s", f"{WIDTH}x{HEIGHT}", "-pix_fmt", "yuv420p",
                             "-f", "rawvideo", "-framerate", str(RATE), "-i", str(clip), "-lavfi",
                             "[0:v][1:v]psnr=stats_file=-", "-f", "null", "-"], env=env, capture_output=True, text=True,
                            timeout=300)
    values = [float(field.split(":")[1]) for line in result.stdout.splitlines() for field in line.split()
              if field.startswith("psnr_y:")]
    assert values, result.stderr[-1000:]
    return sum(values) / len(values)


def decoded_pts(env, path):
    """avdec_h264's output time stamps (s) through qtdemux, in order."""
    _, output = launch(env, "-v", "filesrc", f"location={path}", "!", "qtdemux", "!", "h264parse", "!", "avdec_h264",
                       "!", "fakesink", "silent=false", timeout=120, messages=False, check=False)
    stamps = []
    for match in re.finditer(r"chain.*?pts: (\d+):(\d+):([\d.]+)", output):
        h, m, s = match.groups()
        stamps.append(round(int(h) * 3600 + int(m) * 60 + float(s), 6))
    return stamps


def warnings(output):
    return [line for line in output.splitlines() if line.startswith("WARNING")]


def done_field(output, field):
    """A field of the vtmultipasssink-done element message gst-launch-1.0 -m printed (None if absent)."""
    match = re.search(r"vtmultipasssink-done.*", output)
    if not match:
        return None
    value = re.search(rf"\b{field}=\((?:int|double|uint|string)\)([^,;\s]+)", match.group(0))
    return value.group(1) if value else None


def run_pipeline_limited(env, work, *description, timeout=300, expect="error", file_size_limit=None):
    """tests/lib/run-pipeline.py as PipelineRunner runs it, under a file-size limit (bytes; SIGXFSZ
    ignored, so that a write past it fails with EFBIG as under `ulimit -f` with `trap '' XFSZ`)."""
    import json
    import resource
    import signal
    import tempfile
    from pathlib import Path

    from swiftvt_testing import SYSTEM_PYTHON, PipelineResult, PipelineRunner

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))
    report = Path(tempfile.mkstemp(dir=work, prefix="run-pipeline-", suffix=".json")[1])
    command = [SYSTEM_PYTHON, str(PipelineRunner.SCRIPT), "--timeout", str(timeout), "--expect", expect,
               "--report", str(report), "--", *map(str, description)]
    completed = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=timeout + 30, preexec_fn=limit)
    data = json.loads(report.read_text()) if report.stat().st_size else {}
    report.unlink()
    return PipelineResult(completed.returncode, data.get("ended_by"), data.get("errors", []), data.get("warnings", []),
                          completed.stdout)
