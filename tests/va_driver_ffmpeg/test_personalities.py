"""Driver personalities (SWIFTVT_VA_PERSONALITY, tests/va-driver/README.md): a subset of the
corpus (a pic_order_cnt_type 1 stream among them) decodes exactly under each, with the
personality vaInitialize read; completion is asynchronous (a latency of 100 ms per picture shows
in the run time); iHD's decoding error from vaSyncSurface reaches FFmpeg. Each stream is decoded
once per personality; three tests read it.

    /usr/bin/python3 -m pytest -q tests/va_driver_ffmpeg/test_personalities.py -k mesa
"""
import functools

import pytest

PERSONALITIES = ["ihd", "mesa", "nvdec"]
FILES = ["BA_MW_D.264", "BAMQ1_JVC_C.264", "Cisco_Men_whisper_640x320_CABAC_Bframe_9.264", "test_scalinglist_jm.264"]
CASES = [(p, f) for p in PERSONALITIES for f in FILES]
# FFmpeg waits for each of 100 pictures before reading it back. Its decoder runs a few pictures
# ahead of the read-back, so the waits overlap: 100 ms each gave about 4 s (0.3 s without a
# latency); 2 s is the bound.
ASYNC_MIN_SECONDS = 2.0


@pytest.fixture(scope="module")
def decoded(manifest, ffmpeg_va):
    @functools.cache
    def decode(personality, name):
        stream = manifest[name]
        result = ffmpeg_va.decode(stream.path, SWIFTVT_VA_PERSONALITY=personality, SWIFTVT_VA_LOG=1)
        result.frames = result.output.stat().st_size // stream.frame_size if result.output.exists() else 0
        result.output.unlink(missing_ok=True)
        return result

    return decode


@pytest.mark.parametrize("personality,name", CASES)
def test_decodes_exactly(decoded, manifest, personality, name):
    result = decoded(personality, name)
    assert result.status == 0, f"{personality}: {name}: ffmpeg exit {result.status}: {result.log[-1500:]}"
    assert result.frames == manifest[name].frames
    assert result.md5 == manifest[name].ref_md5


@pytest.mark.parametrize("personality,name", CASES)
def test_driver_is_clean(decoded, personality, name):
    report = decoded(personality, name).report
    assert report.count("VALIDATION") == 0, report.first("VALIDATION")
    assert report.leaks == []


@pytest.mark.parametrize("personality,name", CASES)
def test_vaInitialize_read_the_personality(decoded, personality, name):
    assert f"personality {personality}, latency 3 ms" in decoded(personality, name).log


def test_asynchronous_completion(ffmpeg_va, small):
    result = ffmpeg_va.decode(small.path, SWIFTVT_VA_PERSONALITY="mesa", SWIFTVT_VA_LATENCY_MS=100)
    assert result.status == 0, result.log[-1500:]
    assert result.md5 == small.ref_md5
    assert result.seconds >= ASYNC_MIN_SECONDS, \
        f"{result.seconds:.2f} s (at least {ASYNC_MIN_SECONDS} s expected with 100 ms per picture)"


def test_ihd_decoding_error_of_vaSyncSurface_reaches_ffmpeg(ffmpeg_va, small):
    result = ffmpeg_va.decode(small.path, output="/dev/null", SWIFTVT_VA_PERSONALITY="ihd",
                              SWIFTVT_VA_SYNC_ERROR="decoding-error:5")
    assert result.status != 124, "ffmpeg hung"
    assert "Failed to sync surface" in result.log
