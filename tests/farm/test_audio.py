"""The farm's output carries INPUT's audio tracks, copied and in sync (issue 38).

The inputs flash the picture white for one frame and beep (50 ms of 1 kHz) at the same instant,
each whole second (FFmpeg's lavfi sources; x264 with B-frames, AAC with its 1024 samples of
priming, 3 s of 320x240 at 30/1). In the input and in the output, FFmpeg finds each flash (the
first bright frame, signalstats) and each beep's onset (the first loud sample of the decoded
audio): the beep's offset from its flash must be the input's, within OFFSET_TOLERANCE_S (FFmpeg
applies the edit lists; a dropped AAC priming packet moves the audio by 21 ms, a zeroed start
by the whole shift).

    cd /work/wt-audio && /usr/bin/python3 -m pytest -q tests/farm/test_audio.py
"""
import json
import struct
import subprocess

import pytest

from swiftvt_testing import ROOT, run

FARM_ARGS = ("--bitrate", 300, "--workers", 2, "--chunk-seconds", 1)
SAMPLE_RATE = 48000
FRAME_S = 1 / 30
# Offsets are measured to the sample (the beep) and to the frame's time stamp (the flash): what
# the copy may move them is the containers' rounding (Matroska's milliseconds), not a frame.
OFFSET_TOLERANCE_S = 0.002

VIDEO = ("color=black:s=320x240:r=30:d=3,"
         "drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='lt(mod(t\\,1)\\,1/30)'")
AUDIO = f"aevalsrc='if(lt(mod(t\\,1)\\,0.05)\\,sin(2*PI*1000*t)\\,0)':s={SAMPLE_RATE}:d=3"


def make(media, name, *ffmpeg_args):
    """`name` in the media folder, made once per session by FFmpeg from the flash/beep MP4."""
    path = media.directory / name
    if not path.exists():
        media.ffmpeg(*ffmpeg_args, path)
    return path


@pytest.fixture(scope="session")
def flash_beep_mp4(media):
    """The MP4 with video and AAC (FFmpeg writes the AAC priming as an edit list: media_time 1024)."""
    return make(media, "flash-beep.mp4", "-f", "lavfi", "-i", VIDEO, "-f", "lavfi", "-i", AUDIO,
                "-c:v", "libx264", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "96k")


@pytest.fixture(scope="session")
def flash_beep_mkv(media, flash_beep_mp4):
    """The same streams in Matroska: the priming packet at 0 ms, the video from 21 ms."""
    return make(media, "flash-beep.mkv", "-i", flash_beep_mp4, "-c", "copy")


@pytest.fixture(scope="session")
def shifted_audio_mp4(media, flash_beep_mp4):
    """The audio 200 ms later than the video (an empty edit before it)."""
    return make(media, "shifted-audio.mp4", "-i", flash_beep_mp4, "-itsoffset", "0.2", "-i", flash_beep_mp4,
                "-map", "0:v", "-map", "1:a", "-c", "copy")


def flashes(path):
    """Presentation times (s) of the first bright frame of each flash."""
    assert not any(c in str(path) for c in ":,;'[]\\"), f"{path} cannot go into an FFmpeg filter graph"
    out = subprocess.run(["ffprobe", "-v", "error", "-f", "lavfi", "-i", f"movie={path},signalstats",
                          "-show_entries", "frame=pts_time:frame_tags=lavfi.signalstats.YAVG", "-of", "json"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    frames = [(float(f["pts_time"]), float(f["tags"]["lavfi.signalstats.YAVG"])) for f in json.loads(out)["frames"]]
    darkest, brightest = min(v for _, v in frames), max(v for _, v in frames)
    return onsets(frames, (darkest + brightest) / 2)


def beeps(path, env, track=0):
    """Presentation times (s) of each beep's first loud sample: the decoded audio (FFmpeg applies
    the edit list and skips the priming) from the first decoded frame's time."""
    first = run(["ffprobe", "-v", "error", "-select_streams", f"a:{track}", "-show_entries", "frame=pts_time",
                 "-of", "csv=p=0", path], env).split()[0].split(",")[0]
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-map", f"0:a:{track}", "-f", "s16le", "-ac", "1",
                          "-ar", str(SAMPLE_RATE), "-"], check=True, capture_output=True, timeout=60, env=env).stdout
    samples = struct.unpack(f"<{len(raw) // 2}h", raw)
    loudest = max(abs(s) for s in samples)
    return onsets(((float(first) + i / SAMPLE_RATE, abs(s)) for i, s in enumerate(samples)), loudest / 2)


def onsets(values, threshold, min_gap=0.5):
    """Times where the value first rises above threshold, at least min_gap after the last."""
    found = []
    for time, value in values:
        if value > threshold and (not found or time - found[-1] >= min_gap):
            found.append(time)
    return found


def beep_offsets(path, env):
    """[beep onset - flash] (s) for each of the three marks."""
    seen_flashes, seen_beeps = flashes(path), beeps(path, env)
    assert len(seen_flashes) == 3 and len(seen_beeps) == 3, \
        f"{path}: expected 3 flashes and 3 beeps, found {seen_flashes} and {seen_beeps}"
    return [beep - flash for flash, beep in zip(seen_flashes, seen_beeps)]


def audio_md5(path, env, stream="0:a"):
    """MD5 of the audio packets as they are (no decoding), in the order and number FFmpeg reads them."""
    return run(["ffmpeg", "-v", "error", "-i", path, "-map", stream, "-c", "copy", "-f", "md5", "-"], env).strip()


def audio_packets(path, env):
    """(pts, duration, size, MD5) of every packet of the first audio track, as FFmpeg reads them."""
    out = run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:a:0", "-c", "copy", "-f", "framemd5", "-"], env)
    rows = [line.split(",") for line in out.splitlines() if line and not line.startswith("#")]
    return [(int(r[2]), int(r[3]), int(r[4]), r[5].strip()) for r in rows]


def check_in_sync(farm, source, output):
    result = farm.ok(source, output, *FARM_ARGS)
    expected, measured = beep_offsets(source, farm.env), beep_offsets(output, farm.env)
    print(f"{source.name}: beep - flash {[round(o * 1000, 2) for o in expected]} ms in the input, "
          f"{[round(o * 1000, 2) for o in measured]} ms in the output")
    for before, after in zip(expected, measured):
        assert abs(after - before) <= OFFSET_TOLERANCE_S, \
            f"the beeps moved against the flashes: {expected} s in the input, {measured} s in the output"
    return result


def streams_of(probe, path, kind):
    return [s for s in probe.streams(path) if s["codec_type"] == kind]


def test_aac_is_copied_packet_for_packet(farm, probe, flash_beep_mkv, tmp_path):
    """Matroska input (every AAC packet reaches GStreamer): the same packets, bytes and count,
    the same codec and channels; the summary counts the track."""
    output = tmp_path / "copied.mp4"
    result = farm.ok(flash_beep_mkv, output, *FARM_ARGS)
    assert ", 1 audio track copied," in result.summary(), result.summary()
    source_audio, output_audio = streams_of(probe, flash_beep_mkv, "audio"), streams_of(probe, output, "audio")
    assert len(output_audio) == 1
    for field in ("codec_name", "channels", "sample_rate"):
        assert output_audio[0][field] == source_audio[0][field], field
    source_packets, output_packets = audio_packets(flash_beep_mkv, farm.env), audio_packets(output, farm.env)
    assert [p[2:] for p in output_packets] == [p[2:] for p in source_packets]
    assert audio_md5(output, farm.env) == audio_md5(flash_beep_mkv, farm.env)
    assert not probe.decode_errors(output)


def test_aac_priming_edit_list_is_kept(farm, probe, flash_beep_mp4, tmp_path):
    """MP4 input: the priming packet is copied and the edit list skips it, as in the input (the
    first packet at -1024 samples, the track starting at 0). GStreamer 1.22's qtdemux delivers
    no last packet of such a track (it starts after the movie's duration in media time): the
    output has every other packet, byte for byte, and the job says what it could not copy."""
    output = tmp_path / "priming.mp4"
    result = farm.ok(flash_beep_mp4, output, *FARM_ARGS)
    source_packets, output_packets = audio_packets(flash_beep_mp4, farm.env), audio_packets(output, farm.env)
    assert output_packets[0][0] == source_packets[0][0] == -1024
    assert output_packets == source_packets[:len(output_packets)]
    assert len(source_packets) - len(output_packets) <= 1
    if len(output_packets) < len(source_packets):
        assert (f"multipass-farm: note: {flash_beep_mp4}'s audio track 1: the demuxer delivered packets up to"
                in result.log)
    for kind in ("video", "audio"):
        assert float(streams_of(probe, output, kind)[0]["start_time"]) == \
            pytest.approx(float(streams_of(probe, flash_beep_mp4, kind)[0]["start_time"]), abs=0.001), kind


def test_mp4_with_aac_stays_in_sync(farm, probe, flash_beep_mp4, tmp_path):
    check_in_sync(farm, flash_beep_mp4, tmp_path / "in-sync.mp4")
    offsets = beep_offsets(tmp_path / "in-sync.mp4", farm.env)
    assert all(abs(offset) < FRAME_S for offset in offsets), offsets


def test_matroska_video_after_its_audio_stays_in_sync(farm, probe, flash_beep_mkv, tmp_path):
    """The video starts 21 ms after the audio (the priming packet at 0): still so in the output."""
    output = tmp_path / "from-mkv.mp4"
    check_in_sync(farm, flash_beep_mkv, output)
    video, audio = streams_of(probe, output, "video")[0], streams_of(probe, output, "audio")[0]
    assert float(video["start_time"]) - float(audio["start_time"]) == pytest.approx(0.021, abs=0.001)


def test_shifted_audio_keeps_its_offset(farm, probe, shifted_audio_mp4, tmp_path):
    """Audio 200 ms after the video: kept, not zeroed."""
    output = tmp_path / "shifted.mp4"
    check_in_sync(farm, shifted_audio_mp4, output)
    assert beep_offsets(output, farm.env)[0] == pytest.approx(0.2, abs=0.005)


def test_late_video_keeps_its_offset(farm, probe, media, flash_beep_mp4, tmp_path):
    """The video 500 ms later than the audio (Matroska: the video's blocks from 521 ms)."""
    source = make(media, "late-video.mkv", "-itsoffset", "0.5", "-i", flash_beep_mp4, "-i", flash_beep_mp4,
                  "-map", "0:v", "-map", "1:a", "-c", "copy")
    output = tmp_path / "late-video.mp4"
    check_in_sync(farm, source, output)
    assert beep_offsets(output, farm.env)[0] == pytest.approx(-0.5, abs=0.005)


def test_matroska_output_carries_flac_in_sync(farm, probe, media, flash_beep_mp4, tmp_path):
    """OUTPUT.mkv (matroskamux) carries what mp4mux cannot: FLAC, copied and in sync."""
    source = make(media, "flac.mkv", "-i", flash_beep_mp4, "-c:v", "copy", "-c:a", "flac")
    output = tmp_path / "flac-out.mkv"
    check_in_sync(farm, source, output)
    assert streams_of(probe, output, "audio")[0]["codec_name"] == "flac"
    assert audio_md5(output, farm.env) == audio_md5(source, farm.env)


def test_every_audio_track_is_copied_in_order(farm, probe, media, flash_beep_mkv, tmp_path):
    source = make(media, "two-tracks.mkv", "-i", flash_beep_mkv, "-map", "0:v", "-map", "0:a", "-map", "0:a",
                  "-c:v", "copy", "-c:a:0", "copy", "-c:a:1", "ac3")
    output = tmp_path / "two.mp4"
    result = farm.ok(source, output, *FARM_ARGS)
    assert ", 2 audio tracks copied," in result.summary(), result.summary()
    assert [s["codec_name"] for s in streams_of(probe, output, "audio")] == ["aac", "ac3"]
    for track in ("0:a:0", "0:a:1"):
        assert audio_md5(output, farm.env, track) == audio_md5(source, farm.env, track), track


def test_no_audio_drops_it(farm, probe, flash_beep_mp4, tmp_path):
    output = tmp_path / "silent.mp4"
    result = farm.ok(flash_beep_mp4, output, *FARM_ARGS, "--no-audio")
    assert streams_of(probe, output, "audio") == []
    assert ", 0 audio tracks copied," in result.summary(), result.summary()
    assert f"multipass-farm: note: {flash_beep_mp4}'s audio track(s) (1) are not copied (--no-audio)" in result.log


def test_subtitles_are_dropped_with_a_note(farm, probe, media, flash_beep_mp4, tmp_path):
    subtitles = media.directory / "flash-beep.srt"
    subtitles.write_text("1\n00:00:00,500 --> 00:00:01,500\nflash\n\n2\n00:00:02,000 --> 00:00:02,800\nbeep\n")
    source = make(media, "subtitled.mkv", "-i", flash_beep_mp4, "-i", subtitles, "-map", "0", "-map", "1",
                  "-c", "copy", "-c:s", "srt")
    assert streams_of(probe, source, "subtitle"), "FFmpeg wrote no subtitle track"
    output = tmp_path / "unsubtitled.mp4"
    result = farm.ok(source, output, *FARM_ARGS)
    note = f"multipass-farm: note: {source}'s subtitle track(s) (1) are not copied (the farm copies audio only)"
    assert note in result.log.splitlines(), result.log[-2000:]
    assert [s["codec_type"] for s in probe.streams(output)] == ["video", "audio"]


def test_audio_the_output_cannot_carry_is_refused_before_any_work(farm, media, flash_beep_mp4, tmp_path):
    """FLAC into MP4: exit 1, one line naming the track, its format and what to do, before pass 1;
    nothing at OUTPUT, no temporary file."""
    source = make(media, "flac.mkv", "-i", flash_beep_mp4, "-c:v", "copy", "-c:a", "flac")
    output = tmp_path / "refused.mp4"
    result = farm.run(source, output, *FARM_ARGS)
    assert result.status == 1, result.log[-2000:]
    errors = [line for line in result.log.splitlines() if line.startswith("multipass-farm: error:")]
    assert errors == [f"multipass-farm: error: {source}'s audio track 1 of 1 is Free Lossless Audio Codec (FLAC) "
                      "(audio/x-flac), which mp4mux cannot carry in MP4 (refused.mp4): pass --no-audio, "
                      "or write OUTPUT as .mkv (matroskamux), which carries it"], result.log[-2000:]
    assert "pass 1" not in result.log
    assert [p.name for p in tmp_path.iterdir()] == [farm.tmpdir.name]  # the job's TMPDIR only
    assert farm.leftovers() == []


def test_unknown_output_extension_is_refused_at_once(farm, flash_beep_mp4, tmp_path):
    output = tmp_path / "out.avi"
    result = farm.run(flash_beep_mp4, output, *FARM_ARGS)
    assert result.status == 1
    assert result.log.strip() == (f"multipass-farm: error: cannot write {output}: the farm writes .mp4, .m4v, "
                                  ".mov (QuickTime) or .mkv (Matroska), not .avi")
    assert [p.name for p in tmp_path.iterdir()] == [farm.tmpdir.name]  # the job's TMPDIR only
    assert farm.leftovers() == []


def test_edit_lists_keep_each_track_in_its_place():
    """mp4edits alone: the tracks as they went into the muxer (ns) -> the edit lists written. The
    AAC track's priming packet is first on the timeline: the video waits in an empty edit, the
    audio's media edit skips the priming, and a track without an end plays to its media's end."""
    import sys
    sys.path.insert(0, str(ROOT / "pipelines" / "lib"))
    from swiftvt_farm.mp4edits import Track, TrackTiming, edit_lists
    priming = 21_333_333  # 1024 samples at 48 kHz
    tracks = [Track("vide", 30000, 90 * 1000, []), Track("soun", 48000, 142 * 1024, [])]
    video_start = priming + 21_000_000  # the video 21 ms after the audio's first heard sample
    timings = [TrackTiming("vide", first_decode=video_start - 66_666_667, start=video_start,
                           end=video_start + 3_000_000_000),
               TrackTiming("soun", first_decode=0, start=priming)]
    video, audio = edit_lists(1000, tracks, timings)
    assert video == [(21, -1), (3000, 2000)]     # 21 ms late, then from the B-frame delay (2 frames)
    assert audio == [(3008, 1024)]               # 142 packets less the priming, from sample 1024
