"""Fixtures for the tests of vtenc's and vtmultipasssink's VA-API path against SwiftVT's software VA
driver (tests/va-driver/) on a private Xvfb display (tests/vtenc_va/test_*.py). The driver writes
every macroblock as I_PCM after SwiftVT's own packed SPS/PPS/slice headers, so a correct client
gives a lossless stream: decoding it must give back exactly the source frames, in display order.

- `sources` (session): the encoder inputs as gst-launch fragments with the MD5 and count of their
  I420 frames: `cisco` (the corpus raw clip, 320x192, 9 frames at 12/1), `hd` (the 300-frame 720p
  corpus stream decoded) and `small` (a 152x100 raw cut of it, about 60 frames: cropping, 160x112
  coded; a file, since vtmultipasssink needs a seekable source); `hd30`, the first 30 frames of `hd`;
- `va_env` (session): `plugin_env` with the driver's DISPLAY, LIBVA_DRIVER_NAME, LIBVA_DRIVERS_PATH;
- `vtenc` (session): `vtenc.encode(NAME, SOURCE, PROPS..., **DRIVER_VARIABLES)` runs
  `SOURCE ! vtenc PROPS ! video/x-h264,stream-format=byte-stream ! filesink` through the
  bus-watching runner (tests/lib/run-pipeline.py: an ERROR before the main loop cannot hang it),
  once per NAME (tests asserting on the same run share it); the result has the runner's report
  (ERRORs and WARNINGs as data, vtenc's `active-backend` at the end), the driver's report and
  parameter log (`DriverLog`, tests/lib/va_client_testing.py) and the coded stream's path;
- `encoder_device` (session): the device encodes H.264; under a decode-only personality for the whole
  run (SWIFTVT_VA_PERSONALITY=nvdec) the tests of the encoder itself do not apply and say so
  (test_refusals.py checks what such a device gives).

The whole suite also runs with SWIFTVT_VA_PERSONALITY=ihd or mesa in the environment (what differs
is expected accordingly, va_client_testing.PERSONALITY). Without the corpus, FFmpeg or Xvfb the
tests are skipped (failed under SWIFTVT_REQUIRE_TEST_INPUTS).
"""
import dataclasses
import shutil
from pathlib import Path

import pytest

from swiftvt_testing import PipelineRunner, corpus_root, require, run
from va_client_testing import DriverLog, driver_env, md5_of

ENCODER = "vtenc"   # the encoder's name in every pipeline, for its active-backend


@dataclasses.dataclass
class Source:
    pipeline: list      # gst-launch fragment producing I420 frames
    md5: str            # MD5 of all its frames
    frames: int


@pytest.fixture(scope="session")
def corpus_inputs():
    root = corpus_root()
    inputs = {"manifest": root / "h264" / "MANIFEST.tsv", "raw_clip": root / "yuv" / "CiscoVT2people_320x192_12fps.yuv",
              "hd_stream": root / "h264" / "VID_1280x720_cabac_temporal_direct.264"}
    for path in inputs.values():
        require(path.is_file(), f"vtenc-va: test corpus file {path} not found (set SWIFTVT_CORPUS to the folder "
                                "holding h264/MANIFEST.tsv and yuv/)")
    for tool in ("ffmpeg", "ffprobe"):
        require(shutil.which(tool), f"vtenc-va: {tool} not found (Debian package ffmpeg; "
                "scripts/install-deps.sh installs it)")
    return inputs


@pytest.fixture(scope="session")
def va_env(corpus_inputs, plugin_env, software_va):
    env = software_va.env(plugin_env)
    # The registry scan loads the plugin, which registers its elements per VA device: once here.
    run(["gst-inspect-1.0", "vtenc"], env)
    return env


@pytest.fixture(scope="session")
def sources(corpus_inputs, va_env, tmp_path_factory):
    work = tmp_path_factory.mktemp("sources")
    raw_clip, hd_stream = corpus_inputs["raw_clip"], corpus_inputs["hd_stream"]
    hd_md5 = next(line.split("\t")[7] for line in corpus_inputs["manifest"].read_text().splitlines()
                  if line.split("\t")[0] == hd_stream.name)
    hd = ["filesrc", f"location={hd_stream}", "!", "h264parse", "!", "avdec_h264", "!", "video/x-raw,format=I420"]
    small_raw = work / "small_152x100.yuv"
    run(["gst-launch-1.0", "-q", *hd, "!", "identity", "eos-after=60", "!", "videoscale", "!",
         "video/x-raw,width=152,height=100,format=I420", "!", "filesink", f"location={small_raw}"], va_env)
    cisco = ["filesrc", f"location={raw_clip}", "!", "rawvideoparse", "width=320", "height=192", "format=i420",
             "framerate=12/1"]
    small = ["filesrc", f"location={small_raw}", "!", "rawvideoparse", "width=152", "height=100", "format=i420",
             "framerate=30/1"]
    # identity's eos-after counts what it passes, which with the decoder's first buffers is not
    # exactly 60: the clip is as many frames as the file holds.
    hd30 = hd + ["!", "identity", "eos-after=30"]
    return {"cisco": Source(cisco, md5_of(raw_clip), 9), "hd": Source(hd, hd_md5, 300), "hd30": Source(hd30, None, 30),
            "small": Source(small, md5_of(small_raw), small_raw.stat().st_size // (152 * 100 * 3 // 2)),
            # The same frames with HDR metadata in the caps (mastering display, content light level).
            "cisco-hdr": Source(cisco + ["!", "video/x-raw,mastering-display-info=(string)35400:14600:8500:39850:6550:"
                                         "2300:15635:16450:10000000:1,content-light-level=(string)1000:400"],
                                md5_of(raw_clip), 9)}


@dataclasses.dataclass
class Encoded:
    result: object      # swiftvt_testing.PipelineResult
    output: Path
    report: DriverLog
    params: DriverLog

    @property
    def backend(self):
        return self.result.property(ENCODER, "active-backend") or ""

    @property
    def ok(self):
        return self.result.ended_by == "eos"

    def why(self):
        return self.result.log[-3000:]


class VtencVA:
    def __init__(self, env, work):
        self.env, self.work = env, Path(work)
        self.runs = {}

    def pipeline(self, name, *description, timeout=300, force_key_units=(), environment=None, **variables):
        """`description` (a pipeline writing WORK/NAME.*) with the driver's report and parameter log
        for NAME and `variables` (SWIFTVT_VA_...); `environment` replaces va_env (e.g. without DISPLAY)."""
        env, report, params = driver_env(environment or self.env, self.work, name, GST_DEBUG="vtenc:4",
                                         GST_DEBUG_NO_COLOR="1", **variables)
        result = PipelineRunner(env, self.work)(*description, timeout=timeout, properties=("active-backend",),
                                                force_key_units=force_key_units)
        return result, DriverLog(report), DriverLog(params)

    def encode(self, name, source, *props, force_key_units=(), environment=None, **variables):
        """`source ! [identity name=forcer !] vtenc PROPS ! byte-stream ! filesink WORK/NAME.h264`, once per name."""
        if name not in self.runs:
            output = self.work / f"{name}.h264"
            forcer = ["identity", "name=forcer", "!"] if force_key_units else []
            result, report, params = self.pipeline(
                name, *source.pipeline, "!", *forcer, "vtenc", f"name={ENCODER}", *props, "!",
                "video/x-h264,stream-format=byte-stream", "!", "filesink", f"location={output}",
                force_key_units=force_key_units, environment=environment, **variables)
            self.runs[name] = Encoded(result, output, report, params)
        return self.runs[name]


@pytest.fixture(scope="session")
def vtenc(va_env, tmp_path_factory):
    return VtencVA(va_env, tmp_path_factory.mktemp("vtenc-va"))


@pytest.fixture(scope="session")
def encoder_device(vtenc, sources):
    """The device encodes H.264 (the encoder's tests apply); under a decode-only personality set for
    the whole run they are skipped with the reason (test_refusals.py covers that device)."""
    probe = vtenc.encode("device-probe", sources["cisco"], "hardware=require")
    if any("no H.264 encoder (VAEntrypointEncSlice" in error["message"] for error in probe.result.errors):
        pytest.skip("the VA-API device of this run (SWIFTVT_VA_PERSONALITY) encodes no H.264: the encoder's own "
                    "tests do not apply (test_refusals.py checks what this device gives)")
    assert probe.ok, f"vtenc hardware=require on the software VA driver:\n{probe.why()}"
    return probe
