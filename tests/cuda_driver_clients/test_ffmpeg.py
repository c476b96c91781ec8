"""Every undamaged, progressive, 8-bit 4:2:0 corpus stream through FFmpeg's NVDEC client
(`-hwaccel cuda`, frames downloaded by FFmpeg's cuda hwcontext) on the software CUDA double:
the manifest's MD5 over all frames, every picture decoded by the double (not by FFmpeg's software
fallback), no VALIDATION line, no object left at exit. A stream the double or NVDEC's limits refuse
must make FFmpeg fail or fall back visibly. Three streams also go through
`-hwaccel_output_format cuda -vf hwdownload,format=nv12`.

    /usr/bin/python3 -m pytest -q tests/cuda_driver_clients/test_ffmpeg.py -k BA_MW_D
"""
import pytest

from va_testing import DAMAGED_STREAMS, corpus_stream_names, field_order_and_pix_fmt

# The damaged streams have no reference decode to match (MANIFEST's ref_md5 is one decoder's
# concealment): they are not run here.
STREAMS = [name for name in corpus_stream_names() if name not in DAMAGED_STREAMS]


def ffmpeg_command(stream, output, *options, pix_fmt="yuv420p"):
    return ["ffmpeg", "-hide_banner", "-nostdin", "-y", "-threads", "1", "-hwaccel", "cuda", *options,
            "-i", stream, *(["-vf", "hwdownload,format=nv12"] if options else []), "-f", "rawvideo",
            "-pix_fmt", pix_fmt, output]


@pytest.fixture(scope="module")
def runs(manifest, cuda):
    cache = {}

    def decode(name):
        if name not in cache:
            stream = manifest[name]
            field_order, pix_fmt = field_order_and_pix_fmt(stream.path, cuda.env)
            if field_order not in ("progressive", "unknown") or pix_fmt not in ("yuv420p", "yuvj420p"):
                cache[name] = None, f"{field_order} {pix_fmt} (progressive 8-bit 4:2:0 only)"
            else:
                output = cuda.work / f"ffmpeg-{name}.yuv"
                cache[name] = cuda.run(ffmpeg_command(stream.path, output, pix_fmt=pix_fmt), output=output), None
                output.unlink(missing_ok=True)
        return cache[name]

    return decode


@pytest.mark.parametrize("name", STREAMS)
def test_decodes_exactly_through_the_double(runs, manifest, reference_md5, name):
    run, why = runs(name)
    if run is None:
        pytest.skip(f"{name}: {why}")
    assert run.status != 124, f"{name}: ffmpeg timed out"
    surfaces = run.lines("VALIDATION: cuvidCreateDecoder: ulNumDecodeSurfaces")
    if surfaces:
        # NVDEC takes at most 32 decode surfaces (LS_SVA_D: FFmpeg asks for 38): the double refuses
        # the decoder as NVDEC does, FFmpeg says so and decodes in software, exactly.
        assert "hwaccel initialisation returned error" in run.log, "FFmpeg did not say that it fell back"
        assert run.status == 0 and run.md5 == reference_md5(name, run.md5), run.log[-1500:]
        assert run.pictures == 0, f"{name}: the double decoded {run.pictures} picture(s) after refusing"
        return
    refused = run.lines("REFUSED")
    if refused:
        assert "Error decoding a picture with NVDEC" in run.log or "returned error" in run.log
        pytest.skip(f"{name}: refused by the double: {refused[0]}")
    assert run.status == 0, f"{name}: ffmpeg exit {run.status}: {run.log[-1500:]}"
    assert run.lines("VALIDATION") == []
    assert run.pictures >= manifest[name].frames, f"{name}: only {run.pictures} picture(s) decoded by the double"
    assert run.md5 == reference_md5(name, run.md5)
    assert run.leaks == [], run.leaks


@pytest.mark.parametrize("name", ["BA_MW_D.264", "CVPCMNL1_SVA_C.264", "test_scalinglist_jm.264"])
def test_frames_kept_on_the_device_then_downloaded(manifest, cuda, reference_md5, name):
    require_stream = manifest.get(name)
    if require_stream is None:
        pytest.skip(f"{name} is not in the corpus")
    output = cuda.work / f"hwdownload-{name}.nv12"
    run = cuda.run(ffmpeg_command(require_stream.path, output, "-hwaccel_output_format", "cuda"), output=output)
    assert run.status == 0, run.log[-1500:]
    assert run.lines("VALIDATION") == []
    assert run.pictures >= require_stream.frames
    assert run.md5 == reference_md5(name, run.md5)
    assert run.leaks == [], run.leaks
