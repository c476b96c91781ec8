"""Fixtures for the tests of pipelines/multipass-farm.py (tests/farm/test_*.py).

- `farm_env`: the environment of the job and of gst-launch-1.0 with the built plugin and
  swiftvt-farm (SWIFTVT_PLUGIN and SWIFTVT_FARM_TOOL, defaults in build/), through a private plugin
  directory and registry as pipelines/lib/plugin-env.sh makes them;
- `farm`: runs the job (`farm.run(INPUT, OUTPUT, *args)` -> FarmRun with status, output, log), under
  a timeout;
- `media`: makes inputs with GStreamer and FFmpeg (`media.clip(...)`, `media.ffmpeg(...)`);
- `probe`: ffprobe answers (`probe.frames(path)`, `probe.streams(path)`, `probe.packets(path)`).

A test that lacks a tool is skipped, and fails under SWIFTVT_REQUIRE_TEST_INPUTS (CI), saying what
is missing and which Debian package brings it.
"""
import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# SWIFTVT_FARM_JOB: another copy of the job (an older one, to see a test fail on what it fixed).
FARM_JOB = Path(os.environ.get("SWIFTVT_FARM_JOB") or ROOT / "pipelines" / "multipass-farm.py")
# The job's interpreter: gi and distributed come from Debian packages, not from a virtualenv.
JOB_PYTHON = "/usr/bin/python3"


def require(available, what):
    """Skips the test (fails it under SWIFTVT_REQUIRE_TEST_INPUTS) unless `available`."""
    if available:
        return
    if os.environ.get("SWIFTVT_REQUIRE_TEST_INPUTS"):
        pytest.fail(what)
    pytest.skip(what)


@pytest.fixture(scope="session")
def farm_env(tmp_path_factory):
    plugin = Path(os.environ.get("SWIFTVT_PLUGIN") or ROOT / "build" / "libgstswiftvt.so")
    farm_tool = Path(os.environ.get("SWIFTVT_FARM_TOOL") or ROOT / "build" / "swiftvt-farm")
    require(plugin.is_file(), f"no plugin at {plugin} (meson compile -C build, or set SWIFTVT_PLUGIN)")
    require(farm_tool.is_file(), f"no swiftvt-farm at {farm_tool} (meson compile -C build, or set SWIFTVT_FARM_TOOL)")
    for tool in ("gst-launch-1.0", "ffprobe", "ffmpeg"):
        require(shutil.which(tool), f"{tool} not found (scripts/install-deps.sh installs it)")
    require(subprocess.run([JOB_PYTHON, "-c", "import distributed"], capture_output=True).returncode == 0,
            f"Dask distributed not importable by {JOB_PYTHON} (Debian package python3-distributed)")
    work = tmp_path_factory.mktemp("gst")
    (work / "plugins").mkdir()
    (work / "plugins" / "libgstswiftvt.so").symlink_to(plugin.resolve())
    return dict(os.environ, SWIFTVT_PLUGIN=str(plugin.resolve()), SWIFTVT_FARM_TOOL=str(farm_tool.resolve()),
                GST_PLUGIN_PATH=str(work / "plugins"), GST_REGISTRY=str(work / "registry.bin"))


def run(command, env, timeout=120, check=True):
    """stdout of `command`; with check, an assertion naming the command and its stderr on failure."""
    result = subprocess.run([str(c) for c in command], env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"{command[0]} failed ({result.returncode}):\n{result.stderr[-3000:]}"
    return result.stdout


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


@pytest.fixture
def farm(farm_env, tmp_path):
    return Farm(farm_env, tmp_path)


class Media:
    """Inputs made at test time (never committed): videotestsrc patterns through x264enc."""

    def __init__(self, env, directory):
        self.env, self.directory = env, Path(directory)

    def gst(self, *pipeline, timeout=120):
        run(["gst-launch-1.0", "-q", *pipeline], self.env, timeout=timeout)

    def ffmpeg(self, *args, timeout=120):
        run(["ffmpeg", "-v", "error", "-y", *args], self.env, timeout=timeout)

    def clip(self, name, frames=150, width=320, height=240, rate="30/1", pattern="ball", key_int=30,
             muxer="mp4mux", encoder_options=()):
        """`frames` of videotestsrc `pattern` with a time overlay, x264enc (a key frame every
        `key_int` frames at most), in `muxer`. Made once per session and name."""
        path = self.directory / name
        if not path.exists():
            self.gst("videotestsrc", f"pattern={pattern}", f"num-buffers={frames}", "!",
                     f"video/x-raw,format=I420,width={width},height={height},framerate={rate}", "!", "timeoverlay", "!",
                     "x264enc", f"key-int-max={key_int}", "speed-preset=fast", "bitrate=2000", *encoder_options, "!",
                     muxer, "!", "filesink", f"location={path}")
        return path


@pytest.fixture(scope="session")
def media(farm_env, tmp_path_factory):
    return Media(farm_env, tmp_path_factory.mktemp("media"))


class Probe:
    def __init__(self, env):
        self.env = env

    def streams(self, path):
        """ffprobe's streams of `path` (codec_type, codec_name, start_time, duration, ...)."""
        return json.loads(run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", path], self.env))["streams"]

    def frames(self, path, stream="v:0"):
        """The decoded frames' presentation times (s) of `stream`, in presentation order."""
        out = run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "frame=pts_time",
                   "-of", "csv=p=0", path], self.env)
        return sorted(float(line.split(",")[0]) for line in out.split() if line.strip() and line != "N/A")

    def packets(self, path, stream="v:0"):
        """(pts_time, dts_time, size, flags) of every packet of `stream`, in file order."""
        out = run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries",
                   "packet=pts_time,dts_time,size,flags", "-of", "csv=p=0", path], self.env)
        packets = []
        for line in out.splitlines():
            pts, dts, size, flags = line.split(",")[:4]
            packets.append((float(pts), float(dts), int(size), flags))
        return packets

    def decode_errors(self, path):
        """FFmpeg's complaints when decoding every stream of `path` (empty when clean)."""
        return subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "null", "-"], env=self.env,
                              capture_output=True, text=True, timeout=120).stderr.strip()


@pytest.fixture(scope="session")
def probe(farm_env):
    return Probe(farm_env)
