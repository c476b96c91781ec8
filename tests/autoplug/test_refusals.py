"""What cannot work fails once and early (issue 15; was tests/autoplug.sh 3, 4, 5 and the 4:2:2
checks of its device mode). Failing pipelines run through tests/lib/run-pipeline.py (never
gst-launch-1.0's main loop), except the hang check, which is about gst-launch-1.0 itself.

Without a device:
- an unmet hardware=require fails the state change with exactly one ERROR (vtdec, vtdec_hw, vtenc,
  vtenc_h264_hw, vtmultipasssink, which leaves nothing at its location), and decodebin given
  vtdec_hw first moves on to vtdec;
- caps that can never work give one ERROR from vtdec (not one per retry), first on the bus; a
  byte-stream labelled alignment=au straight from filesrc is not refused with "Output caps are
  unfixed";
- h264parse-to-avcc ! vtdec hardware=require through gst-launch-1.0, 20 runs: 0 hangs (the failure
  is synchronous, so gst-launch-1.0's main loop is never needed).
With the software VA driver: a 4:2:2 stream the device cannot decode: vtdec_hw's profile caps keep
decodebin on vtdec, and vtdec hardware=require refuses it at the caps (codec_data), not at the
first frame.
"""
import re
import subprocess

import pytest

from autoplug_testing import decode
from swiftvt_testing import PipelineRunner

REQUIRE = {
    "vtdec hardware=require": (
        r"hardware=require, but no hardware device here decodes H.264.*Use hardware=auto",
        lambda s, w: ["filesrc", f"location={s}", "!", "h264parse-to-avcc", "!", "vtdec", "hardware=require", "!",
                      "video/x-raw,format=I420", "!", "filesink", f"location={w / 'out.yuv'}"]),
    "vtdec_hw": (r"hardware=require, but no hardware device here decodes H.264",
                 lambda s, w: ["filesrc", f"location={s}", "!", "h264parse", "!", "vtdec_hw", "!", "fakesink"]),
    "vtenc hardware=require": (r"hardware=require, but no VA-API device here encodes H.264",
                               lambda s, w: ["videotestsrc", "num-buffers=5", "!", "vtenc", "hardware=require", "!",
                                             "fakesink"]),
    "vtenc_h264_hw": (r"hardware=require",
                      lambda s, w: ["videotestsrc", "num-buffers=5", "!", "vtenc_h264_hw", "!", "fakesink"]),
    "vtmultipasssink hardware=require": (r"hardware=require",
                                         lambda s, w: ["videotestsrc", "num-buffers=5", "!", "vtmultipasssink",
                                                       "hardware=require", f"location={w / 'mp.mp4'}"]),
}


@pytest.fixture(scope="module")
def required(no_device_env, stream, tmp_path_factory):
    done = {}

    def get(name):
        if name not in done:
            work = tmp_path_factory.mktemp("require")
            done[name] = (PipelineRunner(no_device_env, work)(*REQUIRE[name][1](stream, work), timeout=30), work)
        return done[name]
    return get


def text(error):
    """An ERROR as the runner prints it: its message and debug string."""
    return f"{error['message']} {error['debug'] or ''}"


@pytest.mark.parametrize("name", REQUIRE)
def test_require_without_device_fails_the_state_change(required, name):
    result, _ = required(name)
    assert result.status == 1 and result.ended_by == "state-change-failure", result.log[-2000:]


# The element each ERROR must come from; GST_RESOURCE_ERROR_NOT_FOUND (no device).
REQUIRE_ELEMENT = {"vtdec hardware=require": "swiftvtdec0", "vtdec_hw": "swiftvtdechardware0",
                   "vtenc hardware=require": "swiftvtenc0", "vtenc_h264_hw": "swiftvtenchardware0",
                   "vtmultipasssink hardware=require": "swiftvtmultipasssink0"}


@pytest.mark.parametrize("name", REQUIRE)
def test_require_without_device_is_one_error(required, name):
    result, _ = required(name)
    assert result.error_domains() == [(REQUIRE_ELEMENT[name], "gst-resource-error-quark", 3)], result.errors


@pytest.mark.parametrize("name", REQUIRE)
def test_require_without_device_says_why(required, name):
    result, _ = required(name)
    # The text starts with the name of the element instance that posted it.
    expected = f"^{re.escape(REQUIRE_ELEMENT[name])}: " + REQUIRE[name][0]
    assert any(re.search(expected, text(e)) for e in result.errors), result.errors


def test_require_without_device_multipass_sink_writes_nothing(required):
    _, work = required("vtmultipasssink hardware=require")
    assert not (work / "mp.mp4").exists()


def test_decodebin_moves_on_from_vtdec_hw_to_vtdec(no_device_env, stream, reference_md5):
    decoded = decode(dict(no_device_env,
                          GST_PLUGIN_FEATURE_RANK=no_device_env["GST_PLUGIN_FEATURE_RANK"] + ",vtdec_hw:MAX"),
                     "decodebin", stream)
    assert (decoded.decoders, decoded.frames, decoded.md5, decoded.errors, decoded.ended) == \
        (["vtdec_hw", "vtdec"], 100, reference_md5, 0, "eos"), decoded.line


CAPS = {
    "avc without codec_data": ("stream-format=avc needs codec_data", lambda s: [
        "filesrc", f"location={s}", "!", "h264parse", "!", "video/x-h264,stream-format=avc", "!", "capssetter",
        "replace=true", "caps=video/x-h264,stream-format=avc,alignment=au", "!", "vtdec", "!", "fakesink"]),
    "a bad codec_data": ("codec_data in the caps is not a valid avcC", lambda s: [
        "filesrc", f"location={s}", "!", "h264parse", "!", "video/x-h264,stream-format=avc", "!", "capssetter",
        "caps=video/x-h264,codec_data=(buffer)0142", "!", "vtdec", "!", "fakesink"]),
    "an SVC stream": ("SVC/MVC", lambda s: [
        "filesrc", f"location={s.parent / 'sps_subsetsps_bothVUI.264'}", "!", "h264parse", "!",
        "vtdec", "!", "fakesink"]),
}


@pytest.fixture(scope="module")
def refused_caps(no_device_env, stream, tmp_path_factory):
    done = {}

    def get(name):
        if name not in done:
            runner = PipelineRunner(no_device_env, tmp_path_factory.mktemp("caps"))
            done[name] = runner(*CAPS[name][1](stream), timeout=30)
        return done[name]
    return get


@pytest.mark.parametrize("name", CAPS)
def test_caps_that_never_work_one_error_from_vtdec(refused_caps, name):
    """One, and the first on the bus: GST_STREAM_ERROR_FORMAT (h264parse's not-negotiated follows)."""
    result = refused_caps(name)
    assert [e["element"] for e in result.errors].count("swiftvtdec0") == 1, result.errors
    assert result.error_domains()[0] == ("swiftvtdec0", "gst-stream-error-quark", 11), result.errors


@pytest.mark.parametrize("name", CAPS)
def test_caps_that_never_work_first_error_says_why(refused_caps, name):
    result = refused_caps(name)
    assert result.errors and CAPS[name][0] in text(result.errors[0]), result.errors


def test_byte_stream_labelled_au_from_filesrc_is_not_unfixed(no_device_env, stream, pipeline):
    result = PipelineRunner(no_device_env, pipeline.work)(
        "filesrc", f"location={stream}", "!", "video/x-h264,stream-format=byte-stream,alignment=au", "!", "vtdec", "!",
        "fakesink", timeout=60)
    assert result.status == 0, result.log[-2000:]
    assert "unfixed" not in result.log


def test_gst_launch_never_hangs_on_an_unmet_require(no_device_env, stream, tmp_path):
    hangs = 0
    for _ in range(20):
        try:
            subprocess.run(["gst-launch-1.0", "filesrc", f"location={stream}", "!", "h264parse-to-avcc", "!", "vtdec",
                            "hardware=require", "!", "video/x-raw,format=I420", "!", "filesink",
                            f"location={tmp_path / 'hang.yuv'}"], env=no_device_env, capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            hangs += 1
    assert hangs == 0, f"gst-launch-1.0 hung {hangs} times in 20 runs"


def test_422_through_decodebin_with_a_device_uses_vtdec(device_env, fixture_422):
    decoded = decode(device_env, "decodebin", fixture_422)
    assert (decoded.decoders, decoded.frames, decoded.errors, decoded.ended) == (["vtdec"], 12, 0, "eos"), decoded.line


def test_422_vtdec_require_with_a_device_refused_at_the_caps(device_env, fixture_422, pipeline):
    result = PipelineRunner(device_env, pipeline.work)("filesrc", f"location={fixture_422}", "!",
                                                       "h264parse", "!", "vtdec",
                                                       "hardware=require", "!", "fakesink", timeout=30)
    assert result.errors and ("swiftvtdec0: hardware=require, but no hardware device here can decode this "
                              "stream: VA-API: chroma_format_idc 2"
                              in text(result.errors[0])), result.log[-2000:]
    # GST_STREAM_ERROR_CODEC_NOT_FOUND: the device has no decoder for this stream.
    assert result.error_domains()[0] == ("swiftvtdec0", "gst-stream-error-quark", 6), result.errors
