"""vtenc_h265's input formats (issue 37 item 2): the HEVC profile follows the format (A.3: 8-bit
4:2:0 Main, 10-bit 4:2:0 Main 10, 4:2:2 and 4:4:4 the format range extensions profiles, which
ffprobe calls Rext) and the caps name it, with tier and level, as h265parse names x265enc's stream
of the same pictures; the pixel format survives and the stream decodes at PSNR-Y >= 38 dB."""
import pytest

from encoder_formats_testing import psnr_y
from parity_testing import stream_fields
from vtenc_h265_testing import caps_fields


# (format, FFmpeg pixel format, ffprobe's profile, the caps' profile)
FORMATS = [("I420", "yuv420p", "Main", "main"), ("I420_10LE", "yuv420p10le", "Main 10", "main-10"),
           ("Y42B", "yuv422p", "Rext", "main-422-10"), ("I422_10LE", "yuv422p10le", "Rext", "main-422-10"),
           ("Y444", "yuv444p", "Rext", "main-444"), ("Y444_10LE", "yuv444p10le", "Rext", "main-444-10")]


@pytest.fixture(scope="module", params=FORMATS, ids=[f[0] for f in FORMATS])
def encoded(request, runner, work):
    fmt, *_ = request.param
    name = work / f"format-{fmt}"
    runner.eos(f"videotestsrc num-buffers=10 pattern=ball ! video/x-raw,format={fmt},width=160,height=120,"
               f"framerate=30/1 ! tee name=s s. ! queue ! filesink location={name}.yuv s. ! queue ! vtenc_h265 ! "
               f"video/x-h265,stream-format=byte-stream ! filesink location={name}.h265", timeout=120)
    return request.param, name


def test_profile_and_pixel_format_as_ffprobe_reads_them(encoded, h265_env):
    (fmt, pixfmt, profile, _), name = encoded
    assert stream_fields(h265_env, f"{name}.h265", "profile,pix_fmt", count_frames=False) == f"{profile},{pixfmt}"


def test_decodes_with_psnr_y_at_least_38_db(encoded, h265_env):
    (fmt, pixfmt, *_), name = encoded
    psnr = psnr_y(h265_env, f"{name}.h265", f"{name}.yuv", pixfmt)
    print(f"{fmt}: PSNR-Y {psnr} dB")
    assert psnr == "inf" or float(psnr or 0) >= 38, psnr


def test_caps_name_profile_tier_and_level_as_h265parse_names_x265encs(encoded, h265_env):
    (fmt, _, _, caps_profile), _ = encoded
    source = f"videotestsrc num-buffers=2 ! video/x-raw,format={fmt},width=160,height=120,framerate=30/1"
    ours = caps_fields(h265_env, f"{source} ! vtenc_h265")
    peer = caps_fields(h265_env, f"{source} ! x265enc ! h265parse")
    print(f"{fmt}: vtenc_h265 {ours}, x265enc + h265parse {peer}")
    assert ours["profile"] == caps_profile, ours
    assert ours["profile"] == peer["profile"] and ours["tier"] == peer["tier"], (ours, peer)
    assert ours["level"], ours
    assert ours["stream-format"] == "hvc1" and ours["codec_data"], ours
