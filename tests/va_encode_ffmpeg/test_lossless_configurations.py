"""Lossless encoding through FFmpeg's VA-API encoder (h264_vaapi) on the software driver.

The clip looped to 36 frames and the 152x100 cut are encoded with
    ffmpeg -init_hw_device vaapi=va:$DISPLAY,connection_type=x11 -filter_hw_device va
           -f rawvideo ... -i CLIP -vf format=nv12,hwupload -c:v h264_vaapi OPTIONS out.h264
in several configurations (High IP and IBBP, Constrained Baseline, Main CBR, the cut with B
pictures, the cut with every header written by the driver, a VBR fallback when the driver offers
no CBR). The driver codes I_PCM, so out.h264 decoded by FFmpeg's h264 decoder and by GStreamer's
avdec_h264 must give exactly the source frames; the driver's report has no VALIDATION, REFUSED or
ENCODE line and no VA object left at vaTerminate; its parameter log says what FFmpeg asked for.
Under SWIFTVT_VA_PERSONALITY=nvdec (a decode-only driver) these do not apply: test_personalities.py
checks that every configuration is refused.
"""
import subprocess

import pytest

from swiftvt_testing import require
from va_client_testing import PERSONALITY, avdec_decode, ffmpeg_decode, md5_of

pytestmark = pytest.mark.skipif(PERSONALITY == "nvdec", reason="a decode-only driver (nvdec): test_personalities.py")

# name: (size, source, frames, driver variables, FFmpeg options)
CONFIGURATIONS = {
    "high-ip": ("320x192", "long", 36, {}, "-coder cavlc -profile:v high -qp 20 -g 30 -bf 0"),
    "high-ibbp": ("320x192", "long", 36, {}, "-coder cavlc -profile:v high -qp 20 -g 30 -bf 2"),
    "cb": ("320x192", "long", 36, {}, "-profile:v constrained_baseline -qp 20 -g 30 -bf 0"),
    "main-cbr": ("320x192", "long", 36, {}, "-coder cavlc -profile:v main -b:v 1M -maxrate 1M -g 30 -bf 0"),
    "high-crop-ibbp": ("152x100", "cut", 9, {}, "-coder cavlc -profile:v high -qp 20 -g 30 -bf 2"),
    "driver-headers": ("152x100", "cut", 9, {"SWIFTVT_VA_ENCODE_PACKED": "none"},
                       "-coder cavlc -profile:v high -qp 20 -g 30 -bf 2"),
    "vbr-fallback": ("320x192", "long", 36, {"SWIFTVT_VA_ENCODE_RC": "cqp,vbr"},
                     "-coder cavlc -profile:v main -b:v 1M -maxrate 1M -g 30 -bf 0"),
}
ALL = list(CONFIGURATIONS)
IBBP = ["high-ibbp", "high-crop-ibbp", "driver-headers"]


class Configuration:
    def __init__(self, name, encoded, sources):
        size, source, self.frames, variables, options = CONFIGURATIONS[name]
        self.name, self.source = name, sources[source]
        width, height = map(int, size.split("x"))
        self.frame_size = width * height * 3 // 2
        self.run = encoded(name, size, self.source, *options.split(), **variables)
        self.report, self.params = self.run.report, self.run.params
        self.work = encoded.work


@pytest.fixture(scope="module")
def configuration(encoded, sources):
    made = {}

    def get(name):
        if name not in made:
            made[name] = Configuration(name, encoded, sources)
        return made[name]
    return get


@pytest.fixture(scope="module")
def ffmpeg_decoded(configuration, va_env):
    made = {}

    def get(name):
        if name not in made:
            c = configuration(name)
            made[name] = ffmpeg_decode(va_env, c.run.output, c.work / f"{name}.decoded.yuv")
        return made[name]
    return get


@pytest.mark.parametrize("name", ALL)
def test_ffmpeg_exits_0(configuration, name):
    c = configuration(name)
    assert c.run.status == 0, f"ffmpeg exit {c.run.status}:\n{c.run.log[-2000:]}"


@pytest.mark.parametrize("name", ALL)
def test_every_frame_decodes(configuration, ffmpeg_decoded, name):
    c = configuration(name)
    decoded = ffmpeg_decoded(name)
    got = decoded.stat().st_size // c.frame_size if decoded.exists() else 0
    assert got == c.frames, f"{got} of {c.frames} frames decoded"


@pytest.mark.parametrize("name", ALL)
def test_ffmpeg_decodes_the_source(configuration, ffmpeg_decoded, name):
    c = configuration(name)
    assert md5_of(ffmpeg_decoded(name)) == md5_of(c.source), "FFmpeg's decoding differs from the source"


@pytest.mark.parametrize("name", ALL)
def test_avdec_decodes_the_source(configuration, va_env, name):
    have_avdec = subprocess.run(["gst-inspect-1.0", "avdec_h264"], capture_output=True).returncode == 0
    require(have_avdec, "va-encode-ffmpeg: GStreamer's avdec_h264 not found (Debian package gstreamer1.0-libav): the "
            "second decoder's check is not run")
    c = configuration(name)
    decoded = avdec_decode(va_env, c.run.output, c.work / f"{name}.avdec.yuv")
    assert md5_of(decoded) == md5_of(c.source), "avdec_h264's decoding differs from the source"


@pytest.mark.parametrize("kind", ["VALIDATION", "REFUSED", "ENCODE"])
@pytest.mark.parametrize("name", ALL)
def test_no_driver_complaint(configuration, name, kind):
    c = configuration(name)
    assert c.report.count(f"swiftvt_sw {kind}") == 0, c.report.first(f"swiftvt_sw {kind}")


@pytest.mark.parametrize("name", ALL)
def test_nothing_left_at_vaterminate(configuration, name):
    c = configuration(name)
    assert c.report.terminated(), "no vaTerminate"
    assert not c.report.leaks(), f"objects left: {c.report.leaks()}"


@pytest.mark.parametrize("name", ALL)
def test_a_picture_per_frame(configuration, name):
    c = configuration(name)
    assert c.params.count("^encpic ") == c.frames, f"{c.params.count('^encpic ')} encpic lines for {c.frames} frames"


@pytest.mark.parametrize("name", ALL)
def test_sequence_parameters_given(configuration, name):
    assert configuration(name).params.count("^encseq profile=") > 0, "no encseq line"


@pytest.mark.parametrize("name", ALL)
def test_one_config(configuration, name):
    assert configuration(name).params.count("^encconfig profile=") == 1, "not one encconfig line"


@pytest.mark.parametrize("name", ALL)
def test_p_pictures_have_list_0(configuration, name):
    assert configuration(name).params.count("^encpic type=P .* l0=-") == 0, "a P picture without list 0"


@pytest.mark.parametrize("name", ALL)
def test_no_cabac_picture(configuration, name):
    assert configuration(name).params.count("^encpic .*entropy=cabac") == 0, "a CABAC picture"


@pytest.mark.parametrize("name", ["high-ip", "cb"])
def test_two_idrs_in_36_frames_with_g_30(configuration, name):
    assert configuration(name).params.count("^encpic type=I idr=1 ") == 2


@pytest.mark.parametrize("name", ["high-ip", "cb"])
def test_no_b_pictures_with_bf_0(configuration, name):
    assert configuration(name).params.count("^encpic type=B") == 0


@pytest.mark.parametrize("name", IBBP)
def test_non_reference_b_pictures_with_bf_2(configuration, name):
    assert configuration(name).params.count("^encpic type=B idr=0 ref=0 ") > 0


@pytest.mark.parametrize("name", IBBP)
def test_b_pictures_have_list_1(configuration, name):
    assert configuration(name).params.count("^encpic type=B .* l1=-$") == 0, "a B picture without list 1"


@pytest.mark.parametrize("name", IBBP)
def test_ip_period_3(configuration, name):
    assert configuration(name).params.count("^encseq .*ip_period=3 ") > 0, "ip_period is not 3"


@pytest.mark.parametrize("name, expected", [
    ("cb", "profile=cb rc=cqp "),
    ("main-cbr", "profile=main rc=cbr "),
    # SWIFTVT_VA_ENCODE_RC=cqp,vbr: FFmpeg falls back to VBR.
    ("vbr-fallback", "profile=main rc=vbr "),
])
def test_config_profile_and_rate_control(configuration, name, expected):
    params = configuration(name).params
    assert params.count(f"^encconfig {expected}") == 1, params.lines("^encconfig")


@pytest.mark.parametrize("line", [
    "^encmisc ratecontrol bits_per_second=1000000 ",
    "^encmisc hrd buffer_size=",
    "^encmisc framerate 30/1$",
], ids=["ratecontrol-1-mbit", "hrd", "framerate-30"])
def test_main_cbr_misc_parameters(configuration, line):
    params = configuration("main-cbr").params
    assert params.count(line) > 0, params.lines("^encmisc")


@pytest.mark.parametrize("name", ["high-crop-ibbp", "driver-headers"])
def test_cropped_sequence(configuration, name):
    params = configuration(name).params
    assert params.count("^encseq .*mbs=10x7 frame_cropping=1 crop=0,4,0,6 ") > 0, \
        f"the sequence is not 10x7 macroblocks cropped by 8 and 12: {params.first('^encseq')}"


@pytest.mark.parametrize("name", ALL)
def test_packed_headers(configuration, name):
    params = configuration(name).params
    # FFmpeg's choice is sequence+slice (0x5); with SWIFTVT_VA_ENCODE_PACKED=none, none.
    expected = "packed=0$" if name == "driver-headers" else "packed=0x5$"
    assert params.count(f"^encconfig .* {expected}") == 1, params.lines("^encconfig")
