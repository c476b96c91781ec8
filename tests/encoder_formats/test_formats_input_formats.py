"""Issue 32 row 15, input formats Y42B, Y444, I420_10LE, I422_10LE, Y444_10LE: the profile and
pixel format ffprobe reads are x264enc's (High 4:2:2, High 4:4:4 Predictive, High 10), PSNR-Y of the
decoded stream at least 40 dB; lossless (quality=1) decodes exactly (avdec_h264 and vtdec).
Downstream naming the format's profile (and a level) gets it, into mp4mux; downstream asking
profile=high for Y444: one ERROR at the caps; VA (the software driver, 8-bit 4:2:0 only):
hardware=require one ERROR naming the format, hardware=auto falls back to x264."""
import pytest

from encoder_formats_testing import psnr_y, visible_md5
from parity_testing import assert_one_swiftvt_error, error_kind, stream_fields

FORMATS = [("Y42B", "yuv422p", "High 4:2:2"), ("Y444", "yuv444p", "High 4:4:4 Predictive"),
           ("I420_10LE", "yuv420p10le", "High 10"), ("I422_10LE", "yuv422p10le", "High 4:2:2"),
           ("Y444_10LE", "yuv444p10le", "High 4:4:4 Predictive")]


@pytest.fixture(scope="module", params=FORMATS, ids=[f[0] for f in FORMATS])
def encoded(request, runner, work):
    """One format: the source, vtenc (CRF 23), vtenc quality=1 and x264enc, then both decoders of
    the lossless stream: (format, pixfmt, profile, name, {run: PipelineResult})."""
    fmt, pixfmt, profile = request.param
    name = work / f"r15-{fmt}"
    runs = {"encode": runner("videotestsrc num-buffers=10 pattern=ball ! "
                             f"video/x-raw,format={fmt},width=160,height=120,framerate=30/1 "
                             f"! tee name=s s. ! queue ! filesink location={name}.yuv "
                             "s. ! queue ! vtenc hardware=disable ! video/x-h264,stream-format=byte-stream ! "
                             f"filesink location={name}.h264 "
                             "s. ! queue ! vtenc hardware=disable rate-control=quality quality=1 ! "
                             f"video/x-h264,stream-format=byte-stream ! filesink location={name}.lossless.h264 "
                             "s. ! queue ! x264enc ! video/x-h264,stream-format=byte-stream ! filesink "
                             f"location={name}.x264enc.h264",
                             timeout=180, expect="eos")}
    if runs["encode"].status == 0:
        lossless = f"{name}.lossless.h264"
        runs["avdec_h264"] = runner(f"filesrc location={lossless} ! h264parse ! avdec_h264 ! filesink "
                                    f"location={lossless}.avdec.yuv",
                                    timeout=180, expect="eos")
        runs["vtdec"] = runner(f"filesrc location={lossless} ! h264parse ! vtdec hardware=disable ! filesink "
                               f"location={lossless}.vtdec.yuv",
                               timeout=180, expect="eos")
    return fmt, pixfmt, profile, name, runs


@pytest.mark.parametrize("run", ["encode", "avdec_h264", "vtdec"])
def test_row15_pipeline_ends_by_eos(encoded, run):
    *_, runs = encoded
    assert run in runs, "the encoding pipeline did not end by EOS"
    assert runs[run].status == 0, runs[run].log[-2000:]


def test_row15_profile_is_x264encs_and_psnr_at_least_40_db(encoded, formats_env):
    fmt, pixfmt, profile, name, _ = encoded
    ours = stream_fields(formats_env, f"{name}.h264", "profile,pix_fmt", count_frames=False)
    peer = stream_fields(formats_env, f"{name}.x264enc.h264", "profile,pix_fmt", count_frames=False)
    psnr = psnr_y(formats_env, f"{name}.h264", f"{name}.yuv", pixfmt)
    print(f"{fmt}: PSNR-Y {psnr} dB (CRF 23); x264enc at its 2048 kbit/s: "
          f"{psnr_y(formats_env, f'{name}.x264enc.h264', f'{name}.yuv', pixfmt)} dB")
    assert ours == f"{profile},{pixfmt}" and ours == peer, f"vtenc {ours!r}, x264enc {peer!r}"
    assert psnr == "inf" or float(psnr or 0) >= 40, f"PSNR-Y {psnr!r}"


def test_row15_quality_1_decodes_exactly(encoded):
    fmt, _, _, name, _ = encoded
    want = visible_md5(f"{name}.yuv", fmt, 160, 120)
    got = [visible_md5(f"{name}.lossless.h264.{d}.yuv", fmt, 160, 120) for d in ("avdec", "vtdec")]
    assert got == [want, want], f"source {want}, avdec_h264 and vtdec {got}"


@pytest.mark.parametrize("fmt, caps_profile, profile", [
    ("I420_10LE", "high-10", "High 10"), ("Y42B", "high-4:2:2", "High 4:2:2"),
    ("Y444_10LE", "high-4:4:4", "High 4:4:4 Predictive")], ids=["I420_10LE", "Y42B", "Y444_10LE"])
def test_row15_downstream_naming_the_profile_gets_it_into_mp4mux(runner, formats_env, work, fmt, caps_profile, profile):
    output = work / f"r15-mux-{fmt}.mp4"
    runner.eos(f"videotestsrc num-buffers=10 ! video/x-raw,format={fmt},width=320,height=240,framerate=30/1 "
               f"! vtenc hardware=disable ! video/x-h264,profile={caps_profile},level=(string)3 ! mp4mux ! "
               f"filesink location={output}",
               timeout=180)
    assert stream_fields(formats_env, output, "profile,level,nb_read_frames") == f"{profile},30,10"


def test_row15_y444_with_downstream_asking_high_is_one_error(runner):
    result = runner.error("videotestsrc num-buffers=5 ! video/x-raw,format=Y444,width=160,height=120 ! vtenc name=enc "
                          "hardware=disable ! video/x-h264,profile=high ! fakesink")
    error = assert_one_swiftvt_error(result, "Y444 pictures make a high-4:4:4 stream, but downstream "
                                     "allows only profile high")
    assert error_kind(error) == ("enc", "stream/format")


def test_row15_y444_with_hardware_require_is_one_error(va_runner):
    result = va_runner.error("videotestsrc num-buffers=5 ! "
                             "video/x-raw,format=Y444,width=160,height=120 ! vtenc name=enc "
                             "hardware=require ! fakesink")
    error = assert_one_swiftvt_error(result, r"encodes 8-bit 4:2:0 pictures \(I420, NV12\) only, not Y444")
    assert error_kind(error) == ("enc", "resource/not-found")


def test_row15_hardware_auto_on_a_420_device_falls_back_to_x264(va_runner, va_env, work):
    output = work / "r15-auto.h264"
    va_runner.eos("videotestsrc num-buffers=5 ! "
                  "video/x-raw,format=I422_10LE,width=160,height=120 ! vtenc hardware=auto "
                  f"! video/x-h264,stream-format=byte-stream ! filesink location={output}")
    assert stream_fields(va_env, output, "profile", count_frames=False) == "High 4:2:2"
