"""FFmpeg's own VA encoder (h264_vaapi) through the same driver, compared with SwiftVT's (was section 2
of tests/vtenc-va.sh). Both clients are asked for the same stream: High profile, CAVLC, an IDR every 4
frames, I P P P or I P B B (two B pictures, coded after their anchor). What must agree is what the
driver saw: the sequence parameters and, per picture in coding order, its type, IDR and reference
flags, frame_num, POC, the reference frames and both lists. Not compared: the QPs (each client's rate
control), which packed headers were used (FFmpeg sends its PPS with the SPS), and POC units: SwiftVT
counts two per frame (one per field, as x264 and the JM do), FFmpeg one, so SwiftVT's POCs are
halved before the comparison."""
import re

import pytest

from va_client_testing import clean, decoded_md5, driver_complaint, ffmpeg_vaapi_encode

STRUCTURES = {"ippp": (0, ["allow-frame-reordering=false"]), "ibbp": (2, [])}


def compared_pictures(params, halve_poc):
    """The compared fields of the sequence and picture lines of a parameter log."""
    lines = []
    for line in params.lines(r"^enc(seq|pic)"):
        line = re.sub(r" (qp|bits_per_second)=\d+", "", line)
        if halve_poc and line.startswith("encpic"):
            def halve(match):
                values = ",".join(v if v == "-" else f"{int(v) // 2}" for v in match.group(2).split(","))
                return f"{match.group(1)}={values}"
            line = re.sub(r"\b(poc|refs|l0|l1)=([-\d,]+)", halve, line)
        lines.append(line)
    return lines


@pytest.fixture(scope="module")
def clients(vtenc, sources, corpus_inputs, va_env, encoder_device):
    ffmpeg_runs = {}

    def get(structure):
        b_frames, props = STRUCTURES[structure]
        if structure not in ffmpeg_runs:
            ffmpeg_runs[structure] = ffmpeg_vaapi_encode(
                va_env, vtenc.work, f"ffmpeg-{structure}", "320x192", corpus_inputs["raw_clip"], "-coder", "cavlc",
                "-profile:v", "high", "-g", "4", "-bf", str(b_frames), rate=12, timeout=300)
        swiftvt = vtenc.encode(f"swiftvt-{structure}", sources["cisco"], "hardware=require", "entropy-mode=cavlc",
                               "max-keyframe-interval=4", *props)
        return ffmpeg_runs[structure], swiftvt
    return get


@pytest.mark.parametrize("structure", STRUCTURES)
def test_both_lossless(clients, sources, va_env, structure):
    ffmpeg, swiftvt = clients(structure)
    assert ffmpeg.status == 0, ffmpeg.log[-2000:]
    assert swiftvt.ok, swiftvt.why()
    assert decoded_md5(va_env, ffmpeg.output) == sources["cisco"].md5, "FFmpeg's stream is not lossless"
    assert decoded_md5(va_env, swiftvt.output) == sources["cisco"].md5, "SwiftVT's stream is not lossless"


@pytest.mark.parametrize("structure", STRUCTURES)
def test_same_parameters(clients, structure):
    ffmpeg, swiftvt = clients(structure)
    theirs, ours = compared_pictures(ffmpeg.params, False), compared_pictures(swiftvt.params, True)
    assert len(theirs) > 9, f"FFmpeg's parameter log has {len(theirs)} sequence/picture lines"
    assert ours == theirs


def test_ibbp_has_b_pictures(clients):
    assert any(line.startswith("encpic type=B") for line in compared_pictures(clients("ibbp")[1].params, True))


@pytest.mark.parametrize("structure", STRUCTURES)
def test_ffmpeg_run_clean(clients, structure):
    ffmpeg = clients(structure)[0]
    assert clean(ffmpeg), driver_complaint(ffmpeg)
