"""Every undamaged corpus stream through `vtdec hardware=require hardware-device=cuda` on the
software CUDA double: the MD5 of the decoded frames (I420, cropped) equals MANIFEST.tsv's
ref_md5, the double finds nothing to complain about (no VALIDATION line: contexts current,
surface indices, maps released before reuse, picture parameters consistent with its own parse of
the stream), nothing is left alive at exit, and vtdec's active-backend is the NVDEC one. NV12
output (the surfaces' own layout, no chroma split) gives the same pictures. Each stream is
decoded once; the tests read the run.

    /usr/bin/python3 -m pytest -q tests/vtdec_cuda/test_corpus.py -k CVSE2
"""
import pytest

from va_testing import DAMAGED_STREAMS, corpus_stream_names

# The damaged streams are decoded in tests/vtdec_cuda/test_fault_injection.py's way (damage
# injected), not here: MANIFEST's ref_md5 of a damaged stream is libavcodec's concealment.
STREAMS = [name for name in corpus_stream_names() if name not in DAMAGED_STREAMS]
# Every undamaged stream of the corpus (22 of 25): the double decodes all of them.
MIN_EXACT = 22


@pytest.fixture(scope="module")
def corpus_runs(manifest, vtdec):
    """decode(name): the run of an undamaged stream."""
    cache = {}

    def decode(name):
        if name not in cache:
            stream = manifest[name]
            cache[name] = vtdec.decode(stream.path, "require", frame_size=stream.frame_size)
        return cache[name]

    return decode


@pytest.fixture(params=STREAMS)
def decoded(request, manifest, corpus_runs):
    assert request.param in manifest, f"{request.param}: not in the corpus MANIFEST.tsv"
    run = corpus_runs(request.param)
    run.stream = request.param
    return run


def test_decodes_exactly(decoded, manifest):
    stream = manifest[decoded.stream]
    assert decoded.status != 124, "timed out"
    assert decoded.status == 0, f"ended by {decoded.ended_by}: {decoded.errors}"
    assert decoded.frames == stream.frames
    assert decoded.md5 == stream.ref_md5


def test_decoded_on_nvdec(decoded):
    assert (decoded.backend or "").startswith("NVDEC (hardware: cuda:0"), f"active-backend {decoded.backend!r}"


def test_no_validation_complaints(decoded):
    assert decoded.report.count("VALIDATION") == 0, decoded.report.first("VALIDATION")


def test_nothing_left_alive(decoded):
    assert decoded.report.exits > 0, "the double wrote no live-objects line at exit"
    assert decoded.report.leaks == []


def test_the_corpus_decodes_on_nvdec(corpus_runs, manifest):
    exact = [name for name in sorted(manifest) if name not in DAMAGED_STREAMS
             and (run := corpus_runs(name)).status == 0 and run.md5 == manifest[name].ref_md5]
    assert len(exact) >= MIN_EXACT, f"only {len(exact)} stream(s) decoded exactly on NVDEC"


@pytest.mark.parametrize("name", ["CVPCMNL1_SVA_C.264", "Cisco_Men_whisper_640x320_CABAC_Bframe_9.264",
                                  "VID_1920x1080_cabac_temporal_direct.264"])
def test_nv12_output_is_the_same_picture(vtdec, manifest, name):
    """NV12 straight from the surface: converted to I420 by videoconvert, the same MD5."""
    stream = manifest[name]
    run = vtdec.decode(stream.path, "require", frame_size=stream.frame_size,
                       downstream="video/x-raw,format=NV12 ! videoconvert ! video/x-raw,format=I420")
    assert run.status == 0, run.errors
    assert run.md5 == stream.ref_md5
    assert run.report.count("VALIDATION") == 0, run.report.first("VALIDATION")
