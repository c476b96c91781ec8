"""The farm job's test helpers (pipelines/multipass-farm.py; fixtures in tests/farm/conftest.py)."""
import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from swiftvt_testing import ROOT, SYSTEM_PYTHON, require

# SWIFTVT_FARM_JOB: another copy of the job (an older one, to see a test fail on what it fixed).
FARM_JOB = Path(os.environ.get("SWIFTVT_FARM_JOB") or ROOT / "pipelines" / "multipass-farm.py")
JOB_PYTHON = SYSTEM_PYTHON


def farm_environment(plugin_env):
    """`plugin_env` with swiftvt-farm (SWIFTVT_FARM_TOOL, default build/swiftvt-farm); requires Dask."""
    farm_tool = Path(os.environ.get("SWIFTVT_FARM_TOOL") or ROOT / "build" / "swiftvt-farm")
    require(farm_tool.is_file(), f"no swiftvt-farm at {farm_tool} (meson compile -C build, or set SWIFTVT_FARM_TOOL)")
    require(subprocess.run([JOB_PYTHON, "-c", "import distributed"], capture_output=True).returncode == 0,
            f"Dask distributed not importable by {JOB_PYTHON} (Debian package python3-distributed)")
    return dict(plugin_env, SWIFTVT_FARM_TOOL=str(farm_tool.resolve()))


@dataclasses.dataclass
class FarmRun:
    status: int
    log: str           # stdout and stderr together, in order
    output: Path

    def summary(self):
        """The job's last line about OUTPUT ("multipass-farm: OUTPUT: N frames, ...")."""
        lines = [line for line in self.log.splitlines() if line.startswith(f"multipass-farm: {self.output}:")]
        return lines[-1] if lines else ""


class Farm:
    """Runs the job with a private TMPDIR (its own, its LocalCluster workers' and their encoders'
    temporary folders go there), so that a test sees what a job leaves behind: `leftovers()`."""

    def __init__(self, env, tmp_path):
        self.tmp_path = tmp_path
        self.tmpdir = tmp_path / "tmpdir"
        self.tmpdir.mkdir()
        self.env = dict(env, TMPDIR=str(self.tmpdir))

    # Dask's own scaffolding: the folder its workers' folders go in and its two empty lock files.
    DASK_SCAFFOLDING = {"dask-worker-space", "dask-worker-space/global.lock", "dask-worker-space/purge.lock"}

    def leftovers(self):
        """What is left in the job's TMPDIR, recursively, as paths relative to it (Dask's empty
        scaffolding aside)."""
        return sorted(str(p.relative_to(self.tmpdir)) for p in self.tmpdir.rglob("*")
                      if str(p.relative_to(self.tmpdir)) not in self.DASK_SCAFFOLDING)

    def command(self, source, output, *args):
        return [JOB_PYTHON, str(FARM_JOB), str(source), str(output), *map(str, args)]

    def run(self, source, output, *args, timeout=240):
        output = Path(output)
        try:
            result = subprocess.run(self.command(source, output, *args), env=self.env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            pytest.fail(f"the farm job did not finish in {timeout} s: {(expired.output or '')[-2000:]}")
        return FarmRun(result.returncode, result.stdout, output)

    def ok(self, source, output, *args, **kwargs):
        """A run that must succeed."""
        result = self.run(source, output, *args, **kwargs)
        assert result.status == 0, f"the farm job failed ({result.status}):\n{result.log[-3000:]}"
        assert result.output.is_file(), f"no output file:\n{result.log[-2000:]}"
        return result


# The cluster tests' input (tests/farm/test_cluster.py, test_chunking.py, test_faults.py): 320x240,
# 240 frames at 30/1 of videotestsrc patterns changing every 48 frames (each scrolling), x264enc
# key-int-max=30, in MP4.
PATTERNS = ("smpte", "zone-plate kx2=20 ky2=20 kt=1", "pinwheel", "spokes", "ball")
PATTERN_FRAMES = 240


def make_patterns_clip(env, directory, name, mp4mux_properties=()):
    """The patterns clip at `directory`/`name`, made once (`mp4mux_properties`: e.g. faststart=true)."""
    from swiftvt_testing import run
    path = Path(directory) / name
    if path.exists():
        return path
    raw = Path(directory) / "patterns.yuv"
    if not raw.exists():
        with open(raw.with_suffix(".part"), "wb") as out:
            for pattern in PATTERNS:
                out.write(subprocess.run(["gst-launch-1.0", "-q", "videotestsrc", *f"pattern={pattern}".split(),
                                          "horizontal-speed=2", "num-buffers=48", "!",
                                          "video/x-raw,format=I420,width=320,height=240,framerate=30/1", "!",
                                          "fdsink", "fd=1"], env=env, capture_output=True, check=True,
                                         timeout=60).stdout)
        raw.with_suffix(".part").rename(raw)
    run(["gst-launch-1.0", "-q", "filesrc", f"location={raw}", "!", "rawvideoparse", "width=320", "height=240",
         "format=i420", "framerate=30/1", "!", "x264enc", "key-int-max=30", "speed-preset=fast", "bitrate=2000", "!",
         "mp4mux", *mp4mux_properties, "!", "filesink", f"location={path}"], env, timeout=60)
    return path


def stream_md5(env, path):
    """The MD5 of `path`'s video packets (ffmpeg -c copy -f md5): the H.264 stream, not the container."""
    from swiftvt_testing import run
    return run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v", "-c", "copy", "-f", "md5", "-"], env).strip()


def packet_table(env, path):
    from swiftvt_testing import run
    return run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts,dts,duration,flags,size",
                "-of", "csv=p=0", path], env)


def stream_field(env, path, field, *args):
    from swiftvt_testing import run
    return run(["ffprobe", "-v", "error", *args, "-select_streams", "v", "-show_entries", f"stream={field}",
                "-of", "csv=p=0", path], env).strip()


def kbps(env, path, seconds):
    """The video packets' bits over `seconds`, in kbit/s."""
    from swiftvt_testing import run
    sizes = run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=size", "-of", "csv=p=0",
                 path], env).split()
    return sum(int(s) for s in sizes) * 8 / seconds / 1000


def psnr_y(env, path, reference, reference_input_args=()):
    """Mean PSNR-Y of `path`'s frames against `reference`'s (FFmpeg's psnr filter)."""
    result = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), *reference_input_args, "-i", str(reference),
                             "-lavfi", "[0:v][1:v]psnr=stats_file=-", "-f", "null", "-"], env=env,
                            capture_output=True, text=True, timeout=300)
    values = [float(field.split(":")[1]) for line in result.stdout.splitlines() for field in line.split()
              if field.startswith("psnr_y:")]
    assert values, f"no PSNR figures for {path}: {result.stderr[-1000:]}"
    return sum(values) / len(values)


def idr_pictures(env, path):
    """(frame number, idr_pic_id) of every IDR picture of `path` (FFmpeg's trace_headers), frames
    counted over the coded slices' NAL units (types 1 and 5) as farm.sh counted them."""
    trace = subprocess.run(["ffmpeg", "-v", "verbose", "-i", str(path), "-c", "copy", "-bsf:v", "trace_headers",
                            "-f", "null", "-"], env=env, capture_output=True, text=True, timeout=120)
    frame, idr, found = 0, False, []
    for line in (trace.stdout + trace.stderr).splitlines():
        fields = line.split()
        if not fields:
            continue
        if " nal_unit_type " in line and fields[-1] in ("1", "5"):
            frame += 1
            idr = fields[-1] == "5"
        elif " idr_pic_id " in line and idr:
            found.append((frame - 1, int(fields[-1])))
    return found
