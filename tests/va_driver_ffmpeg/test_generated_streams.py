"""Streams generated with libx264 (in a temporary folder) for what the corpus does not cover:
asymmetric scaling matrices in both 4x4 and 8x8 (a raster/zig-zag mix-up or a transposition
changes the pictures), 8x8 transform, three slices per picture, B-pyramid (MMCO), explicit
weighted P prediction, four references; and a size that is not a multiple of 16 (right and bottom
cropping of the coded picture). FFmpeg's VA client on the driver must match libavcodec's own
decoding, with a clean driver report. Each stream is made and decoded once.

    /usr/bin/python3 -m pytest -q tests/va_driver_ffmpeg/test_generated_streams.py
"""
import pytest

from swiftvt_testing import require, run
from va_testing import ffmpeg_has_libx264, raw_md5

CASES = {
    "high-cqm-slices-pyramid": ("352x288", "high",
                                "cqmfile={cqm}:8x8dct=1:bframes=3:b-pyramid=normal:weightp=2:slices=3:ref=4:keyint=20"),
    "main-cavlc-odd-size": ("322x182", "main", "cabac=0:bframes=2:weightp=1:ref=3:keyint=15"),
}
FRAMES = 40


def asymmetric_cqm():
    def matrix(n, base, step):
        return ",".join(str(min(255, base + step * i + (i % n) * 3)) for i in range(n * n))
    names = ["INTRA4X4_LUMA", "INTRA4X4_CHROMAU", "INTRA4X4_CHROMAV", "INTER4X4_LUMA", "INTER4X4_CHROMAU",
             "INTER4X4_CHROMAV"]
    text = [f"{name} =\n{matrix(4, 6 + k, 2)}\n" for k, name in enumerate(names)]
    text += [f"INTRA8X8_LUMA =\n{matrix(8, 6, 1)}\n", f"INTER8X8_LUMA =\n{matrix(8, 9, 1)}\n"]
    return "\n".join(text)


@pytest.fixture(scope="module")
def generated(ffmpeg_va):
    require(ffmpeg_has_libx264(ffmpeg_va.env),
            "va-driver-ffmpeg: generated streams: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)")
    cqm = ffmpeg_va.work / "asymmetric.cqm"
    cqm.write_text(asymmetric_cqm())
    cache = {}

    def decode(name):
        if name not in cache:
            size, profile, params = CASES[name]
            stream = ffmpeg_va.work / f"{name}.264"
            run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=25",
                 "-frames:v", FRAMES, "-c:v", "libx264", "-profile:v", profile, "-x264-params", params.format(cqm=cqm),
                 "-f", "h264", stream], ffmpeg_va.env)
            result = ffmpeg_va.decode(stream, SWIFTVT_VA_SELFCHECK=1)
            width, height = map(int, size.split("x"))
            result.frames = result.output.stat().st_size // (width * height * 3 // 2) if result.output.exists() else 0
            result.want_md5 = raw_md5(stream, ffmpeg_va.env, "-flags", "unaligned", "-threads", "1")
            cache[name] = result
        return cache[name]

    return decode


@pytest.mark.parametrize("name", CASES)
def test_matches_libavcodec(generated, name):
    result = generated(name)
    assert result.status == 0, f"{name}: ffmpeg exit {result.status}: {result.log[-1500:]}"
    assert result.frames == FRAMES
    assert result.md5 == result.want_md5, f"{name}: md5 {result.md5} (libavcodec: {result.want_md5})"


@pytest.mark.parametrize("name", CASES)
def test_no_validation_complaints(generated, name):
    report = generated(name).report
    assert report.count("VALIDATION") == 0, report.first("VALIDATION")


@pytest.mark.parametrize("name", CASES)
def test_no_selfcheck_failures(generated, name):
    report = generated(name).report
    assert report.count("SELFCHECK") == 0, report.first("SELFCHECK")


@pytest.mark.parametrize("name", CASES)
def test_no_leaks(generated, name):
    assert generated(name).report.leaks == []
