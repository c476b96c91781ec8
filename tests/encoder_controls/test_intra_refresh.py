"""Intra refresh (issue 36 row "slices, intra refresh, AUD, headers"): vtenc intra-refresh=true (x264enc's
intra-refresh) codes one IDR picture and then refreshes the picture with a sweep of intra blocks
every max-keyframe-interval frames, each sweep announced by a recovery point SEI (H.264 D.2.8,
recovery_frame_cnt) and marked as a key unit, the structure x264enc writes in the same pipeline;
the stream decodes whole. vtenc_h265 has no such property (x265 writes no recovery point SEI), and
VA-API refuses it (tests/vtenc_va/test_refusals.py)."""
import subprocess

from encoder_controls_testing import encode_stream, field_values, trace_headers
from swiftvt_testing import run

FRAMES, PERIOD = 100, 25


def encode(runner, work, name, encoder):
    source = f"videotestsrc pattern=ball num-buffers={FRAMES} ! video/x-raw,width=320,height=240,framerate=25/1"
    return encode_stream(runner, work / f"refresh-{name}.h264", source, encoder, "h264")


def structure(env, path):
    """(IDR slices, recovery point SEIs, key units) of an Annex B stream."""
    trace = trace_headers(env, path)
    idr = sum(1 for value in field_values(trace, "nal_unit_type") if value == 5)
    recoveries = len(field_values(trace, "recovery_frame_cnt"))
    flags = run(["ffprobe", "-v", "error", "-show_entries", "packet=flags", "-of", "csv=p=0", path], env).split()
    return idr, recoveries, sum(1 for flag in flags if flag.startswith("K"))


def test_one_idr_then_recovery_points_as_x264enc_writes(runner, work, controls_env):
    ours = structure(controls_env,
                     encode(runner, work, "vtenc", f"vtenc intra-refresh=true max-keyframe-interval={PERIOD}"))
    theirs = structure(controls_env,
                       encode(runner, work, "x264enc", f"x264enc intra-refresh=true key-int-max={PERIOD}"))
    assert ours == theirs, (ours, theirs)
    idr, recoveries, keys = ours
    assert idr == 1 and recoveries >= FRAMES // PERIOD - 1 and keys == FRAMES // PERIOD, ours


def test_without_it_every_period_is_an_idr_picture(runner, work, controls_env):
    path = encode(runner, work, "plain", f"vtenc max-keyframe-interval={PERIOD}")
    idr, recoveries, keys = structure(controls_env, path)
    assert (idr, recoveries, keys) == (FRAMES // PERIOD, 0, FRAMES // PERIOD)


def test_the_refreshed_stream_decodes_whole(runner, work, controls_env):
    path = encode(runner, work, "decode", f"vtenc intra-refresh=true max-keyframe-interval={PERIOD}")
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "framecrc", "-"], env=controls_env,
                             capture_output=True, text=True, timeout=120)
    assert decoded.stderr.strip() == ""
    assert len([line for line in decoded.stdout.splitlines() if not line.startswith("#")]) == FRAMES


def test_vtenc_h265_has_no_intra_refresh(controls_env):
    inspect = run(["gst-inspect-1.0", "vtenc_h265"], controls_env)
    assert "intra-refresh" not in inspect
