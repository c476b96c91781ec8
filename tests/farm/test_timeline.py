"""The farm works in the input's own time (issue 38 rows 1-5 and "Timestamps from the container"):
every frame of the input once in the output, continuous time stamps where chunks meet, streams
that do not start at zero, a variable frame rate and a raw H.264 stream; the report is what was
written.

The inputs: 10 s of 320x240 at 30/1 (300 frames, a key frame every second), x264 in MP4, and
copies of it made with FFmpeg (an AAC track beside it, Matroska, an offset of 10 s, frames
dropped, Annex B). Chunks of 2 s and a low target make every run plan a second pass.
"""
import json
import re

import pytest

FRAMES = 300
TARGET = "100"


@pytest.fixture(scope="module")
def base(media):
    return media.clip("base.mp4", frames=FRAMES)


@pytest.fixture(scope="module")
def with_audio(media, base):
    """base.mp4 and a 440 Hz AAC track (48 kHz: AAC's 1024 priming samples shift it by 21 ms)."""
    path = media.directory / "base-aac.mp4"
    if not path.exists():
        media.ffmpeg("-i", base, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=10",
                     "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac", "-shortest", path)
    return path


def summary_numbers(run):
    """(frames, seconds, kbit/s) from the job's summary line."""
    match = re.search(r": (\d+) frames, ([0-9.]+) s, .*?; ([0-9.]+) kbit/s", run.summary())
    assert match, f"no summary line:\n{run.log[-2000:]}"
    return int(match.group(1)), float(match.group(2)), float(match.group(3))


def assert_every_frame_once(run, probe, frames, step=1 / 30):
    """`frames` frames in the output, presentation times `step` apart (a frame twice, or one
    missing where chunks meet, breaks the spacing), and FFmpeg decodes it without complaint."""
    times = probe.frames(run.output)
    assert len(times) == frames, f"{len(times)} frames in the output, the input has {frames}"
    gaps = [round((b - a) / step, 3) for a, b in zip(times, times[1:])]
    uneven = [(i, gap) for i, gap in enumerate(gaps) if abs(gap - 1) > 0.05]
    assert not uneven, f"frames not {step:.4f} s apart (frame, gap in frames): {uneven[:10]}"
    assert probe.decode_errors(run.output) == ""


def file_kbit_per_s(probe, path):
    packets = probe.packets(path)
    times = sorted(p[0] for p in packets)
    seconds = times[-1] - times[0] + (times[1] - times[0])
    return sum(p[2] for p in packets) * 8 / seconds / 1000


def test_row1_an_audio_track_beside_the_video_leaves_every_frame_once(farm, probe, with_audio, tmp_path):
    """Was: 303 frames from 300 (frames the decoder clipped to a seek position counted in two
    chunks), irregular time stamps where chunks meet, a summary bit rate unlike the file's."""
    run = farm.ok(with_audio, tmp_path / "out.mp4", "--bitrate", TARGET, "--workers", 2, "--chunk-seconds", 2)
    assert_every_frame_once(run, probe, FRAMES)
    frames, seconds, kbps = summary_numbers(run)
    assert (frames, seconds) == (FRAMES, 10.0)
    assert kbps == pytest.approx(file_kbit_per_s(probe, run.output), rel=0.005)


def test_row2_matroska_whose_video_starts_after_its_audio(farm, probe, media, with_audio, tmp_path):
    """Was: "pass 2: chunk 1 (...): 181 frames re-encoded, the plan has 180", every time."""
    source = media.directory / "base-aac.mkv"
    if not source.exists():
        media.ffmpeg("-i", with_audio, "-c", "copy", source)
    video = next(s for s in probe.streams(source) if s["codec_type"] == "video")
    assert float(video["start_time"]) > 0.01, "the test input's video should start after its audio"
    run = farm.ok(source, tmp_path / "out.mp4", "--bitrate", TARGET, "--workers", 2, "--chunk-seconds", 2)
    assert "plan after pass 2" in run.log, "the case needs a second pass"
    # Matroska's millisecond time stamps: 33 or 34 ms apart.
    assert_every_frame_once(run, probe, FRAMES, step=1 / 30)
    assert summary_numbers(run)[0] == FRAMES


def test_row3_video_that_starts_at_10_s(farm, probe, media, base, tmp_path):
    """Was: "20 s and 2 chunks", then "no frames in chunk 0 (0.000 s – 10.000 s)", and a chunk
    folder left in /tmp."""
    source = media.directory / "offset10.mp4"
    if not source.exists():
        media.ffmpeg("-i", base, "-c", "copy", "-output_ts_offset", "10", source)
    assert float(probe.streams(source)[0]["start_time"]) == pytest.approx(10.0)
    timings = tmp_path / "timings.json"
    run = farm.ok(source, tmp_path / "out.mp4", "--bitrate", TARGET, "--workers", 2, "--chunk-seconds", 2,
                  "--timings", timings)
    assert "300 frames from 10.000 s to 20.000 s (10.000 s); 5 chunks" in run.log
    chunks = json.loads(timings.read_text())["chunks"]
    assert [(c["start_s"], c["stop_s"], c["frame_count"]) for c in chunks] == \
        [(10.0 + 2 * i, 12.0 + 2 * i, 60) for i in range(5)]
    assert_every_frame_once(run, probe, FRAMES)
    assert summary_numbers(run)[:2] == (FRAMES, 10.0)
    assert farm.leftovers() == []


def test_row4_variable_frame_rate_report_matches_the_file(farm, probe, media, base, tmp_path):
    """204 frames over 10 s (frames 100-195 dropped). Was: "its data ends early … 1470.69
    kbit/s, +47.07 % off the target" for a file at the target."""
    source = media.directory / "vfr.mp4"
    if not source.exists():
        media.ffmpeg("-i", base, "-vf", "select='not(between(n,100,195))'", "-fps_mode", "vfr",
                     "-c:v", "libx264", "-g", "30", source)
    assert len(probe.frames(source)) == 204
    run = farm.ok(source, tmp_path / "out.mp4", "--bitrate", 300, "--workers", 2, "--chunk-seconds", 2)
    assert "ends early" not in run.log
    frames, seconds, kbps = summary_numbers(run)
    assert (frames, seconds) == (204, 10.0)
    assert kbps == pytest.approx(file_kbit_per_s(probe, run.output), rel=0.005)
    assert probe.frames(run.output) == pytest.approx(probe.frames(source), abs=0.001)


def test_row5_raw_h264_stream(farm, probe, media, base, tmp_path):
    """Was: "duration is unknown", no advice, no fallback."""
    source = media.directory / "base.264"
    if not source.exists():
        media.ffmpeg("-i", base, "-c", "copy", "-bsf:v", "h264_mp4toannexb", source)
    run = farm.ok(source, tmp_path / "out.mp4", "--bitrate", TARGET, "--workers", 2, "--chunk-seconds", 2)
    assert "is a raw video/x-h264 stream: wrapped into an MP4 for seeking" in run.log
    assert_every_frame_once(run, probe, FRAMES)
    assert summary_numbers(run)[:2] == (FRAMES, 10.0)


def test_b_frame_edit_list_keeps_the_frames_at_their_times(farm, probe, media, tmp_path):
    """An input with B-frames (mp4mux writes an edit list for their delay, so the first frame's
    PTS is not 0): the output's frames show at the input's times."""
    source = media.clip("bframes.mp4", frames=120, encoder_options=("bframes=2",))
    input_times = probe.frames(source)
    run = farm.ok(source, tmp_path / "out.mp4", "--bitrate", TARGET, "--workers", 2, "--chunk-seconds", 1)
    assert probe.frames(run.output) == pytest.approx(input_times, abs=0.0011)
    assert probe.decode_errors(run.output) == ""


def test_large_pictures_reach_the_encoder_whole(farm, probe, media, tmp_path):
    """1280x720 pictures (1.4 MB each, written by fdsink in several writes) in chunks of 1 s: the
    end-of-range record goes into the encoder's pipe after the range's last picture, never in the
    middle of it (was: "the frame stream has a record of unknown kind 121 after frame 60")."""
    source = media.clip("large-pictures.mp4", frames=90, width=1280, height=720, pattern="smpte")
    run = farm.ok(source, tmp_path / "out.mp4", "--bitrate", 2000, "--workers", 2, "--chunk-seconds", 1)
    assert summary_numbers(run)[0] == 90
    assert len(probe.frames(run.output)) == 90
