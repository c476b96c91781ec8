"""Every undamaged, progressive, 8-bit 4:2:0 corpus stream through FFmpeg's VA-API client on the
software driver (frames read back with hwdownload, in the stream's native pixel format as
MANIFEST.tsv defines it): MANIFEST.tsv's ref_md5 over all frames, zero VALIDATION complaints and
zero SELFCHECK failures from the driver, no VA object left at vaTerminate (pic_order_cnt_type 1
streams included: the driver rebuilds them as type 0 from FFmpeg's POCs). A stream the driver
refuses is skipped with its reason, not failed. Each stream is decoded once; four tests read it.

    /usr/bin/python3 -m pytest -q tests/va_driver_ffmpeg/test_corpus.py -k BA_MW_D
"""
import os
import shutil
from pathlib import Path

import pytest

from va_testing import DAMAGED_STREAMS, corpus_stream_names, field_order_and_pix_fmt

STREAMS = corpus_stream_names()


@pytest.fixture(scope="module")
def corpus_runs(manifest, ffmpeg_va):
    """decode(name): (run, None) for a stream decoded, (None, why) for one not taken."""
    cache = {}

    def decode(name):
        if name in cache:
            return cache[name]
        stream = manifest[name]
        field_order, pix_fmt = field_order_and_pix_fmt(stream.path, ffmpeg_va.env)
        if name in DAMAGED_STREAMS:
            cache[name] = None, "damaged on purpose"
        elif field_order not in ("progressive", "unknown"):
            cache[name] = None, f"{field_order} (frames only)"
        elif pix_fmt not in ("yuv420p", "yuvj420p"):
            cache[name] = None, f"{pix_fmt} (8-bit 4:2:0 only)"
        else:
            paramlog = ffmpeg_va.work / f"{name}.paramlog"
            run = ffmpeg_va.decode(stream.path, pix_fmt=pix_fmt, SWIFTVT_VA_SELFCHECK=1, SWIFTVT_VA_PARAMLOG=paramlog)
            run.frames = run.output.stat().st_size // stream.frame_size if run.output.exists() else 0
            run.output.unlink(missing_ok=True)
            keep = os.environ.get("SWIFTVT_FFMPEG_PARAMLOG_DIR")
            if keep and paramlog.is_file():
                Path(keep).mkdir(parents=True, exist_ok=True)
                shutil.copy(paramlog, Path(keep) / f"{name}.paramlog")
            refused = run.report.refused
            cache[name] = (None, f"refused by the driver: {refused}") if refused else (run, None)
        return cache[name]

    return decode


@pytest.fixture
def decoded(corpus_runs, stream_name):
    run, why = corpus_runs(stream_name)
    if run is None:
        pytest.skip(f"{stream_name}: {why}")
    return run


@pytest.fixture(params=STREAMS)
def stream_name(request):
    return request.param


def test_decodes_exactly(decoded, manifest, stream_name):
    stream = manifest[stream_name]
    assert decoded.status != 124, f"{stream_name}: ffmpeg timed out"
    assert decoded.status == 0, f"{stream_name}: ffmpeg exit {decoded.status}: {decoded.log[-1500:]}"
    assert decoded.frames == stream.frames
    assert decoded.md5 == stream.ref_md5


def test_no_validation_complaints(decoded):
    assert decoded.report.count("VALIDATION") == 0, decoded.report.first("VALIDATION")


def test_no_selfcheck_failures(decoded):
    assert decoded.report.count("SELFCHECK") == 0, decoded.report.first("SELFCHECK")


def test_no_va_object_left_at_vaTerminate(decoded):
    assert decoded.report.terminated > 0, "the display was not terminated"
    assert decoded.report.leaks == []


def test_the_corpus_decodes(corpus_runs, manifest):
    """More than a handful of streams are taken and decoded exactly (the others' failures are their
    own tests')."""
    exact = [name for name in sorted(manifest) if (run := corpus_runs(name)[0]) is not None
             and run.status == 0 and run.md5 == manifest[name].ref_md5]
    assert len(exact) >= 3, f"only {len(exact)} stream(s) decoded correctly; expected the whole corpus"
