"""A stream whose second coded video sequence starts while pictures of the first still wait for
output: 10 x264 pictures with B-frames and 4 references, then 10 without B-frames and 1 reference,
same size, profile and level. A running session accepts the second SPS in band (its DPB is no
larger), and the decoder starts a new sequence (the DPB size changed) with the first sequence's
last pictures bumped at the IDR picture (C.4.4): they must come out as they were decoded."""
from swiftvt_testing import require, run
from va_testing import ffmpeg_has_libx264

FRAME_SIZE = 176 * 144 * 3 // 2


def make_sequence_change_stream(work, env):
    parts = []
    for name, options in (("first", "keyint=30:bframes=2:ref=4:level=3"),
                          ("second", "keyint=30:bframes=0:ref=1:level=3")):
        part = work / f"sequence-{name}.264"
        run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25",
             "-frames:v", "10", "-c:v", "libx264", "-x264-params", options, "-f", "h264", part], env)
        parts.append(part.read_bytes())
    joined = work / "sequence-change.264"
    joined.write_bytes(b"".join(parts))
    return joined


def check_pictures_of_the_previous_sequence_come_out_whole(vtdec, suite, api):
    """`vtdec` (tests/lib/vtdec_device_testing.py) decodes the stream in one session on its device
    (`api`, the start of active-backend) as libavcodec does: 20 pictures, no VALIDATION line."""
    require(ffmpeg_has_libx264(vtdec.env), f"{suite}: this ffmpeg has no libx264 encoder (Debian's ffmpeg has it)")
    stream = make_sequence_change_stream(vtdec.work, vtdec.env)
    software = vtdec.decode(stream, "disable", frame_size=FRAME_SIZE)
    result = vtdec.decode(stream, "require", frame_size=FRAME_SIZE)
    assert result.status == 0, f"ended by {result.ended_by}: {result.errors}"
    assert result.frames == software.frames == 20
    assert result.md5 == software.md5
    assert result.log.count("decoding 176x144 with") == 1, "the session was replaced: nothing was tested"
    assert (result.backend or "").startswith(api), result.backend
    assert result.report.count("VALIDATION") == 0, result.report.first("VALIDATION")
