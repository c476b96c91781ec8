"""A new coded video sequence inside one session (tests/lib/sequence_change_stream.py): the
previous sequence's last pictures, bumped at the new IDR picture, are read back before the
NVDEC accelerator changes its sequence (surfaces, crop, output pool), so all 20 pictures come out
as libavcodec decodes them, in one session on the device.

    /usr/bin/python3 -m pytest -q tests/vtdec_cuda/test_sequence_change.py
"""
from sequence_change_stream import make_sequence_change_stream
from swiftvt_testing import require
from va_testing import ffmpeg_has_libx264

FRAME_SIZE = 176 * 144 * 3 // 2


def test_pictures_of_the_previous_sequence_come_out_whole(vtdec):
    require(ffmpeg_has_libx264(vtdec.env), "vtdec_cuda: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)")
    stream = make_sequence_change_stream(vtdec.work, vtdec.env)
    software = vtdec.decode(stream, "disable", frame_size=FRAME_SIZE)
    result = vtdec.decode(stream, "require", frame_size=FRAME_SIZE)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.frames == software.frames == 20
    assert result.md5 == software.md5
    assert result.log.count("decoding 176x144 with") == 1, "the session was replaced: nothing was tested"
    assert result.report.count("VALIDATION") == 0, result.report.first("VALIDATION")
