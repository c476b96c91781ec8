"""Issue 32 row 9, access unit delimiters (nal_unit_type 9, 7.3.2.4): the 720p corpus clip (its
first 60-odd frames) through vtenc to byte-stream, into mpegtsmux, and to avc, and through
vtmultipasssink into .h264: exactly one AUD per access unit, first in it, its primary_pic_type
covering the slices' types (Table 7-5), as many access units as x264enc's output of the same frames
(x264 in the same pipeline; the VA encoder and the sink alone: as ffprobe counts). x264: avdec_h264
and vtdec decode the byte-stream output to the same frames; VA: decoded (byte-stream and TS) = the
source frames."""
import hashlib
import subprocess

import pytest

from encoder_formats_testing import aud_report
from parity_testing import decoded_frames, md5_of


@pytest.fixture(scope="module")
def encoded(runner, va_runner, hd_source, formats_env, work):
    """Every row-9 pipeline run once: {name: PipelineResult}; the TS files demuxed to .h264."""
    w = work
    runs = {
        "x264": runner(f"{hd_source} ! tee name=s "
                       f"s. ! queue ! vtenc hardware=disable ! video/x-h264,stream-format=byte-stream ! tee name=v "
                       f"v. ! queue ! filesink location={w}/r9-vtenc.h264 v. ! queue ! mpegtsmux ! filesink "
                       f"location={w}/r9-vtenc.ts "
                       f"s. ! queue ! x264enc ! video/x-h264,stream-format=byte-stream ! tee name=x "
                       f"x. ! queue ! filesink location={w}/r9-x264enc.h264 x. ! queue ! mpegtsmux ! filesink "
                       f"location={w}/r9-x264enc.ts",
                       timeout=180, expect="eos"),
        "avc": runner(f"{hd_source} ! identity eos-after=20 ! tee name=s "
                      "s. ! queue ! vtenc hardware=disable ! video/x-h264,stream-format=avc ! filesink "
                      f"location={w}/r9-vtenc.avc "
                      f"s. ! queue ! x264enc ! video/x-h264,stream-format=avc ! filesink location={w}/r9-x264enc.avc",
                      timeout=180, expect="eos"),
        "va": va_runner(f"{hd_source} ! tee name=s s. ! queue ! filesink location={w}/r9-source.yuv "
                        f"s. ! queue ! vtenc hardware=require ! video/x-h264,stream-format=byte-stream ! tee name=v "
                        f"v. ! queue ! filesink location={w}/r9-va.h264 v. ! queue ! mpegtsmux ! "
                        f"filesink location={w}/r9-va.ts",
                        timeout=180, expect="eos"),
        "multipass": runner(f"{hd_source} ! vtmultipasssink location={w}/r9-multipass.h264 bitrate=1000", timeout=180,
                            expect="eos"),
    }
    for ts in ("vtenc", "x264enc", "va"):
        if (w / f"r9-{ts}.ts").is_file():
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(w / f"r9-{ts}.ts"), "-c", "copy", "-f", "h264",
                            str(w / f"r9-{ts}-ts.h264")], env=formats_env, capture_output=True, timeout=120)
    return runs


@pytest.mark.parametrize("name", ["x264", "avc", "va", "multipass"])
def test_row9_pipeline_ends_by_eos(encoded, name):
    assert encoded[name].status == 0, f"ended by {encoded[name].ended_by}:\n{encoded[name].log[-2000:]}"


@pytest.mark.parametrize("ours, form, peer", [
    pytest.param("r9-vtenc.h264", "byte-stream", "r9-x264enc.h264", id="x264-byte-stream"),
    pytest.param("r9-vtenc-ts.h264", "byte-stream", "r9-x264enc-ts.h264", id="x264-mpegtsmux"),
    pytest.param("r9-vtenc.avc", "avc", "r9-x264enc.avc", id="x264-avc"),
    pytest.param("r9-va.h264", "byte-stream", None, id="va-byte-stream"),
    pytest.param("r9-va-ts.h264", "byte-stream", None, id="va-mpegtsmux"),
    pytest.param("r9-multipass.h264", "byte-stream", None, id="vtmultipasssink-h264"),
])
def test_row9_one_aud_first_in_every_access_unit(encoded, formats_env, work, ours, form, peer):
    path = work / ours
    assert path.is_file() and path.stat().st_size > 0, "no output"
    expected = aud_report(work / peer, form)[0] if peer else decoded_frames(formats_env, path)
    report = aud_report(path, form)
    assert expected and report == (expected, expected, 0), \
        f"access units, AUDs, access units without exactly one leading AUD: {report}, wanted {expected} {expected} 0"


@pytest.fixture(scope="module")
def x264_decoded(encoded, runner, work):
    stream = work / "r9-vtenc.h264"
    return {decoder: runner(f"filesrc location={stream} ! h264parse ! {decoder} ! filesink "
                            f"location={stream}.{decoder.split()[0]}.yuv",
                            timeout=180, expect="eos")
            for decoder in ("avdec_h264", "vtdec hardware=disable")}


@pytest.mark.parametrize("decoder", ["avdec_h264", "vtdec hardware=disable"])
def test_row9_x264_byte_stream_decodes(x264_decoded, decoder):
    assert x264_decoded[decoder].status == 0, x264_decoded[decoder].log[-2000:]


def test_row9_x264_byte_stream_avdec_h264_and_vtdec_agree(x264_decoded, work):
    avdec, vtdec = work / "r9-vtenc.h264.avdec_h264.yuv", work / "r9-vtenc.h264.vtdec.yuv"
    assert avdec.is_file() and avdec.stat().st_size > 0
    assert md5_of(avdec) == md5_of(vtdec), "avdec_h264 and vtdec disagree"


@pytest.mark.parametrize("name", ["r9-va.h264", "r9-va-ts.h264"])
def test_row9_va_stream_decodes_to_the_source(encoded, formats_env, work, name):
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-i", str(work / name), "-f", "rawvideo",
                              "-pix_fmt", "yuv420p", "-"],
                             env=formats_env, capture_output=True, timeout=300).stdout
    assert hashlib.md5(decoded).hexdigest() == md5_of(work / "r9-source.yuv")
