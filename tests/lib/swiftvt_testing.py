"""What SwiftVT's pytest tests share (issue 33: pipeline tests in pytest). The fixtures built on it
are in tests/conftest.py; a test module imports helpers from here, never from a conftest.

- `require(available, what)`: a missing test input skips the test, and fails it under
  SWIFTVT_REQUIRE_TEST_INPUTS (CI), with what is missing and how to get it (tests/lib/require.sh's
  rule).
- `plugin_environment(work)`: the environment of a GStreamer process with the built plugin
  (SWIFTVT_PLUGIN, default build/libgstswiftvt.so) through a private plugin folder and registry, as
  pipelines/lib/plugin-env.sh makes it.
- `run(command, env)`: a command's stdout, an assertion with its stderr when it fails.
- `PipelineRunner`: tests/lib/run-pipeline.py (bus watching, never hangs) with its JSON report:
  `PipelineResult.errors` carry each ERROR's element, GError domain and code.
- `Media`: inputs made at test time (never committed); `Probe`: ffprobe's answers.
- `SoftwareVA`: the project's software VA driver on a private Xvfb display.
"""
import csv
import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# GStreamer's Python bindings and Dask come from Debian packages: the tests run their pipelines with
# Debian's interpreter, whatever python3 comes first on PATH.
SYSTEM_PYTHON = "/usr/bin/python3"


def inputs_required():
    value = os.environ.get("SWIFTVT_REQUIRE_TEST_INPUTS", "")
    return value not in ("", "0")


def require(available, what):
    """Skips the test (fails it under SWIFTVT_REQUIRE_TEST_INPUTS) unless `available`."""
    if available:
        return
    if inputs_required():
        pytest.fail(f"{what}; SWIFTVT_REQUIRE_TEST_INPUTS is set, so a missing test input is a failure")
    pytest.skip(what)


def require_tools(*tools):
    for tool in tools:
        require(shutil.which(tool), f"{tool} not found (scripts/install-deps.sh installs it)")


def built_plugin():
    return Path(os.environ.get("SWIFTVT_PLUGIN") or ROOT / "build" / "libgstswiftvt.so")


def plugin_environment(work):
    """os.environ with GStreamer pointed at the built plugin only, through `work`/plugins and a
    private registry: a plugin blacklisted in the shared registry, or a stale copy elsewhere on
    GST_PLUGIN_PATH, is not used."""
    plugin = built_plugin()
    require(plugin.is_file(), f"no plugin at {plugin} (meson compile -C build, or set SWIFTVT_PLUGIN)")
    work = Path(work)
    (work / "plugins").mkdir(parents=True, exist_ok=True)
    link = work / "plugins" / "libgstswiftvt.so"
    if not link.exists():
        link.symlink_to(plugin.resolve())
    return dict(os.environ, SWIFTVT_PLUGIN=str(plugin.resolve()), GST_PLUGIN_PATH=str(work / "plugins"),
                GST_REGISTRY=str(work / "registry.bin"))


def run(command, env, timeout=120, check=True, input=None):
    """stdout of `command`; with check, an assertion naming the command and its stderr on failure."""
    result = subprocess.run([str(c) for c in command], env=env, capture_output=True, text=True, timeout=timeout,
                            input=input)
    if check:
        assert result.returncode == 0, f"{command[0]} failed ({result.returncode}):\n{result.stderr[-3000:]}"
    return result.stdout


@dataclasses.dataclass
class PipelineResult:
    status: int        # run-pipeline.py's exit status (0 EOS, 1 ERROR, 2 parse error, 124 timeout...)
    ended_by: str      # eos, error, state-change-failure, timeout, signal (None: no report written)
    errors: list       # [{"element", "path", "domain", "code", "message", "debug"}]
    warnings: list
    log: str           # stdout and stderr
    properties: dict = dataclasses.field(default_factory=dict)  # {element: {property: value}} at the end
    messages: list = dataclasses.field(default_factory=list)    # element and progress messages, in order

    def message_structures(self, name):
        """The text of every element/progress message structure called `name`."""
        return [m["structure"] for m in self.messages if m["name"] == name]

    def property(self, element, name):
        """`name` of `element` when the run ended (asked for with `properties=(name,)`)."""
        return self.properties.get(element, {}).get(name)

    def error_domains(self):
        """(element, domain, code) of every ERROR."""
        return [(e["element"], e["domain"], e["code"]) for e in self.errors]


class PipelineRunner:
    """Runs pipeline descriptions through tests/lib/run-pipeline.py: a pipeline that should fail is
    run here, never through gst-launch-1.0's main loop (which can hang on an early ERROR)."""

    SCRIPT = ROOT / "tests" / "lib" / "run-pipeline.py"

    def __init__(self, env, work):
        self.env, self.work = env, Path(work)

    def __call__(self, *description, timeout=60, expect="any", properties=(), force_key_units=()):
        """`properties`: element properties to read when the run ends (`PipelineResult.property`);
        `force_key_units`: frame numbers before which the element named forcer asks for a key unit."""
        report = Path(tempfile.mkstemp(dir=self.work, prefix="run-pipeline-", suffix=".json")[1])
        command = [SYSTEM_PYTHON, str(self.SCRIPT), "--timeout", str(timeout), "--expect", expect,
                   "--report", str(report), *(f"--report-property={name}" for name in properties),
                   *([f"--force-key-units={','.join(map(str, force_key_units))}"] if force_key_units else []),
                   "--", *map(str, description)]
        completed = subprocess.run(command, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, timeout=timeout + 30)
        data = json.loads(report.read_text()) if report.stat().st_size else {}
        report.unlink()
        return PipelineResult(completed.returncode, data.get("ended_by"), data.get("errors", []),
                              data.get("warnings", []), completed.stdout, data.get("properties", {}),
                              data.get("messages", []))

    def eos(self, *description, timeout=60, properties=()):
        """A pipeline that must end by EOS."""
        result = self(*description, timeout=timeout, expect="eos", properties=properties)
        assert result.status == 0, f"expected EOS, got {result.ended_by}:\n{result.log[-3000:]}"
        return result

    def error(self, *description, timeout=60, properties=()):
        """A pipeline that must end by an ERROR."""
        result = self(*description, timeout=timeout, expect="error", properties=properties)
        assert result.status == 0, f"expected an ERROR, got {result.ended_by}:\n{result.log[-3000:]}"
        return result


class Media:
    """Inputs made at test time (never committed), once per session and name."""

    def __init__(self, env, directory):
        self.env, self.directory = env, Path(directory)

    def gst(self, *pipeline, timeout=120):
        run(["gst-launch-1.0", "-q", *pipeline], self.env, timeout=timeout)

    def ffmpeg(self, *args, timeout=120):
        run(["ffmpeg", "-v", "error", "-nostdin", "-y", *args], self.env, timeout=timeout)

    def clip(self, name, frames=150, width=320, height=240, rate="30/1", pattern="ball", key_int=30,
             muxer="mp4mux", encoder_options=()):
        """`frames` of videotestsrc `pattern` with a time overlay, x264enc (a key frame every
        `key_int` frames at most), in `muxer`."""
        path = self.directory / name
        if not path.exists():
            self.gst("videotestsrc", f"pattern={pattern}", f"num-buffers={frames}", "!",
                     f"video/x-raw,format=I420,width={width},height={height},framerate={rate}", "!", "timeoverlay", "!",
                     "x264enc", f"key-int-max={key_int}", "speed-preset=fast", "bitrate=2000", *encoder_options, "!",
                     muxer, "!", "filesink", f"location={path}")
        return path


class Probe:
    """ffprobe's and FFmpeg's answers about a file."""

    def __init__(self, env):
        self.env = env

    def streams(self, path):
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


def corpus_root():
    return Path(os.environ.get("SWIFTVT_CORPUS") or ROOT.parent / "shared" / "corpus")


def corpus_manifest(codec):
    """{file: row} of the corpus's `codec`/MANIFEST.tsv (codec: "h264" or "h265"); {} without it."""
    path = corpus_root() / codec / "MANIFEST.tsv"
    if not path.is_file():
        return {}
    with open(path, newline="") as table:
        return {row["file"]: row for row in csv.DictReader(table, delimiter="\t")}


def corpus_stream(codec, name, suite):
    """The corpus stream `codec`/`name`, required: a skip (a failure under SWIFTVT_REQUIRE_TEST_INPUTS)
    that names `suite` and the missing file when the corpus lacks it."""
    path = corpus_root() / codec / name
    require(path.is_file(), f"{suite}: the corpus stream {path} (set SWIFTVT_CORPUS to the corpus folder)")
    return path


class SoftwareVA:
    """The project's software VA driver (tests/va-driver/, built by scripts/build-software-va-driver.sh)
    on a private Xvfb display, for the session: `env(base)` adds DISPLAY, LIBVA_DRIVER_NAME and
    LIBVA_DRIVERS_PATH (what scripts/with-software-va.sh exports)."""

    def __init__(self, driver_dir):
        self.driver_dir = Path(driver_dir)
        self.process = None
        self.display = None

    def start(self):
        require_tools("Xvfb")
        run(["bash", ROOT / "scripts" / "build-software-va-driver.sh", self.driver_dir], dict(os.environ), timeout=600)
        for number in range(90, 190):
            if Path(f"/tmp/.X11-unix/X{number}").exists() or Path(f"/tmp/.X{number}-lock").exists():
                continue
            process = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "640x480x24", "-nolisten", "tcp",
                                        "-noreset"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100):
                if process.poll() is not None:
                    break
                if Path(f"/tmp/.X11-unix/X{number}").exists():
                    time.sleep(0.2)
                    break
                time.sleep(0.1)
            if process.poll() is None:
                self.process, self.display = process, f":{number}"
                return self
        pytest.fail("could not start Xvfb on any display from :90 to :189")

    def env(self, base):
        return dict(base, DISPLAY=self.display, LIBVA_DRIVER_NAME="swiftvt_sw", LIBVA_DRIVERS_PATH=str(self.driver_dir))

    def stop(self):
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None


def swiftvt_errors(result):
    """The ERRORs of `result` that SwiftVT's elements posted (their path names a SwiftVT type, as
    /GstPipeline:pipeline0/SwiftVTEnc:vtenc0): a test that expects one clear ERROR asserts there is
    exactly one (an upstream source adds GStreamer's own "Internal data stream error" for a fatal
    flow, as with any element that refuses caps)."""
    return [error for error in result.errors if "SwiftVT" in (error["path"] or "")]
