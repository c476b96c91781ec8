"""The same driver, two clients: SwiftVT's and FFmpeg's normalised VA parameters
(SWIFTVT_VA_PARAMLOG) on streams with P, B and weighted prediction, scaling lists, and a
pic_order_cnt_type 1 stream (the client's own 8.2.1.2 POCs), must be identical.

    /usr/bin/python3 -m pytest -q tests/vtdec_va/test_two_clients.py -k MPS
"""
import pytest

from va_testing import ffmpeg_va_command, run_command

FILES = ["BA_MW_D.264", "CVPCMNL1_SVA_C.264", "Cisco_Men_whisper_640x320_CABAC_Bframe_9.264",
         "VID_1280x720_cabac_temporal_direct.264", "test_scalinglist_jm.264", "MPS_MW_A.264", "BAMQ1_JVC_C.264"]


@pytest.mark.parametrize("name", FILES)
def test_parameter_logs_are_identical(vtdec, manifest, name):
    assert name in manifest and manifest[name].path.is_file(), f"{name}: missing from the corpus"
    stream = manifest[name].path
    ours, theirs = vtdec.work / f"{name}.ours.paramlog", vtdec.work / f"{name}.ffmpeg.paramlog"
    result = vtdec.decode(stream, "require", SWIFTVT_VA_PARAMLOG=ours)
    assert result.status == 0, f"SwiftVT: ended by {result.ended_by}: {result.errors}"
    ffmpeg = run_command(ffmpeg_va_command(vtdec.env["DISPLAY"], stream, download=False),
                         dict(vtdec.env, SWIFTVT_VA_PARAMLOG=str(theirs)))
    assert ffmpeg.status == 0, f"FFmpeg exit {ffmpeg.status}: {ffmpeg.log[-1500:]}"
    our_lines = ours.read_text().splitlines()
    assert sum(1 for line in our_lines if line.startswith("pic ")) > 0, "no picture in SwiftVT's log"
    their_lines = theirs.read_text().splitlines() if theirs.is_file() else []
    first = next((i for i, (a, b) in enumerate(zip(our_lines, their_lines)) if a != b), None)
    assert our_lines == their_lines, \
        f"parameter logs differ ({len(our_lines)} / {len(their_lines)} lines), first at line {first}: " \
        f"{our_lines[first] if first is not None else ''!r} / {their_lines[first] if first is not None else ''!r}"
