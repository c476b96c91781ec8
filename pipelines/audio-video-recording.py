#!/usr/bin/env python3
"""Seed 003, audio beside video: record live video and audio into one MP4 file.

    pipelines/audio-video-recording.py [OUTPUT.mp4] [--seconds N] [--aac-encoder NAME]
    pipelines/audio-video-recording.py --smoke     # 4 s into a temporary file, then checked

The pipeline (live test sources standing in for a camera and a microphone):

    videotestsrc is-live=true ! video/x-raw,width=320,height=240,framerate=30/1 ! videoconvert
        ! queue ! vtenc realtime=true ! queue ! mp4mux name=mux ! filesink
    audiotestsrc is-live=true ! audio/x-raw,rate=48000,channels=2 ! audioconvert
        ! queue ! avenc_aac ! queue ! mux.

With real devices, replace the two sources (the rest stays the same):

    v4l2src device=/dev/video0 ! videoconvert ! videoscale ! video/x-raw,width=640,height=480 ! ...
    pulsesrc ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=2 ! ...

Both sources stamp their buffers with the pipeline clock's running time at capture, so mp4mux
lines audio and video up by those timestamps. Recording stops with an EOS event sent into the
pipeline; the script waits for that EOS to reach the bus, so mp4mux has written the moov box
(a file without it is half written), and only then renames OUTPUT.part to OUTPUT.

AAC priming. An AAC encoder emits its first packet before it has seen a full frame of input:
the decoder's first output samples (1024 for avenc_aac, 1600 for voaacenc) are "priming" that
comes before the first captured sample, and an MP4 says so with the audio track's edit list
(elst media_time = the priming, in the track's timescale), which players honour by skipping
them. GStreamer 1.22 does not write this: neither avenc_aac nor voaacenc reports its priming
(no GstAudioClippingMeta, no gst_audio_encoder_set_lookahead; both stamp the first packet with
the first input timestamp), and mp4mux/qtmux derive an edit's media_time only from the first
buffer's PTS-DTS gap (the B-frame case) and never from clipping meta. Shifting the audio DTS to
make that gap would also put a composition offset on every audio sample, which cancels the
edit. So the script measures the encoder's priming itself (an impulse encoded by the same
encoder and decoded by avdec_aac comes out exactly priming samples late) and writes it into
the finished file's audio edit list: media_time = priming, the edit's duration shortened by
as much (fixed-size fields, rewritten in place).

--smoke checks the result, not only the exit code:
  1. the audio track's edit list starts at media_time = the measured priming (in samples of
     the track's timescale);
  2. audio and video stay in sync: the sources flash the picture white (one frame) and beep
     (100 ms of 1 kHz) at the same timestamps, once a second, driven by GstController control
     points on videotestsrc foreground-color and audiotestsrc volume; FFmpeg (ffprobe with the
     movie/amovie sources, an independent demuxer and decoders that apply edit lists) decodes
     the file, and each flash (first bright frame) and beep onset (first loud 1 ms window) must
     be within one frame duration of each other; and, since the flash shows on the first frame
     captured at or after the mark while the beep starts on its exact sample, no beep may come
     after its flash (2 ms of slack). The offsets are printed.

SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so is honoured as pipelines/lib/plugin-env.sh does it: a
private plugin directory holding a link to that file and a private registry, set up before
GStreamer initialises.
"""
import argparse
import atexit
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

WIDTH, HEIGHT, FRAMES_PER_SECOND = 320, 240, 30
SAMPLE_RATE, CHANNELS = 48000, 2
# 10 ms buffers: audiotestsrc applies control points per buffer, and whole seconds fall on
# buffer boundaries, so a beep starts on its exact sample rather than up to a buffer late.
SAMPLES_PER_BUFFER = 480
BEEP_SECONDS = 0.1
BEEP_VOLUME = 0.5
BLACK, WHITE = 0xFF000000, 0xFFFFFFFF  # videotestsrc foreground-color, ARGB
DEFAULT_OUTPUT = "swiftvt-audio-video.mp4"

# Which Debian package provides each element or tool this script needs.
DEBIAN_PACKAGE = {
    "videotestsrc": "gstreamer1.0-plugins-base", "audiotestsrc": "gstreamer1.0-plugins-base",
    "videoconvert": "gstreamer1.0-plugins-base", "audioconvert": "gstreamer1.0-plugins-base",
    "appsrc": "gstreamer1.0-plugins-base", "appsink": "gstreamer1.0-plugins-base",
    "queue": "libgstreamer1.0-0", "filesink": "libgstreamer1.0-0",
    "mp4mux": "gstreamer1.0-plugins-good",
    "avenc_aac": "gstreamer1.0-libav", "avdec_aac": "gstreamer1.0-libav",
    "voaacenc": "gstreamer1.0-plugins-bad",
    "ffprobe": "ffmpeg",
}
AAC_ENCODERS = ["avenc_aac", "voaacenc"]  # in order of preference


def fail(message):
    print(f"audio-video-recording: {message}", file=sys.stderr)
    sys.exit(1)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import plugin_env  # noqa: E402

plugin_env.use_swiftvt_plugin()  # before Gst.init, which reads GST_PLUGIN_PATH and GST_REGISTRY
import gi  # noqa: E402  (after the environment: GStreamer reads it when it initialises)

gi.require_version("Gst", "1.0")
gi.require_version("GstController", "1.0")
from gi.repository import Gst, GstController  # noqa: E402

Gst.init(None)


def require_elements(names):
    """One clear message for the first missing element: what it is and what to install."""
    if Gst.ElementFactory.find("vtenc") is None:
        fail("GStreamer cannot load the swiftvt plugin (no vtenc). Install it (meson install -C build) "
             "or set SWIFTVT_PLUGIN to libgstswiftvt.so.")
    for name in names:
        if Gst.ElementFactory.find(name) is None:
            fail(f"the GStreamer element {name} is missing: install the Debian package {DEBIAN_PACKAGE[name]}")


def choose_aac_encoder(requested):
    if requested:
        if requested not in AAC_ENCODERS:
            fail(f"--aac-encoder must be one of {', '.join(AAC_ENCODERS)}")
        require_elements([requested])
        return requested
    for name in AAC_ENCODERS:
        if Gst.ElementFactory.find(name) is not None:
            return name
    fail("no AAC encoder: install the Debian package gstreamer1.0-libav (avenc_aac) "
         "or gstreamer1.0-plugins-bad (voaacenc)")


# ---- the encoder's priming --------------------------------------------------------------

def measure_encoder_priming(encoder_name):
    """How many samples late the encoder's output comes out of a decoder: its priming.

    Neither avenc_aac nor voaacenc reports it (no clipping meta, no lookahead, no latency), so
    encode one impulse through the same encoder at the recording's rate and channels, decode
    it with avdec_aac (which adds no delay of its own) and see where the impulse lands."""
    require_elements(["appsrc", "appsink", "avdec_aac"])
    impulse_at, length = 4133, 16384  # off any frame boundary; several AAC frames long
    pipeline = Gst.parse_launch(
        f"appsrc name=source format=time caps=audio/x-raw,format=S16LE,layout=interleaved,"
        f"rate={SAMPLE_RATE},channels={CHANNELS} ! audioconvert ! {encoder_name} ! avdec_aac "
        f"! audioconvert ! audio/x-raw,format=S16LE,channels=1 ! appsink name=sink sync=false")
    samples = bytearray(2 * CHANNELS * length)
    for channel in range(CHANNELS):
        struct.pack_into("<h", samples, 2 * (impulse_at * CHANNELS + channel), 20000)
    buffer = Gst.Buffer.new_wrapped(bytes(samples))
    buffer.pts, buffer.duration = 0, Gst.util_uint64_scale(length, Gst.SECOND, SAMPLE_RATE)
    source, sink = pipeline.get_by_name("source"), pipeline.get_by_name("sink")
    pipeline.set_state(Gst.State.PLAYING)
    source.emit("push-buffer", buffer)
    source.emit("end-of-stream")
    decoded = bytearray()
    while (sample := sink.emit("pull-sample")) is not None:
        out = sample.get_buffer()
        decoded += out.extract_dup(0, out.get_size())
    pipeline.set_state(Gst.State.NULL)
    values = [abs(v) for (v,) in struct.iter_unpack("<h", decoded)]
    if not values:
        fail(f"measuring the priming of {encoder_name}: nothing decoded")
    return values.index(max(values)) - impulse_at


# ---- MP4 boxes -----------------------------------------------------------------------------

CONTAINER_BOXES = {b"moov", b"trak", b"edts", b"mdia"}


def boxes(data, start, end):
    """(type, body offset, end offset) of each box in data[start:end]."""
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack_from(">I4s", data, position)
        header = 8
        if size == 1:
            size, header = struct.unpack_from(">Q", data, position + 8)[0], 16
        elif size == 0:
            size = end - position
        if size < header or position + size > end:
            raise ValueError(f"box {kind!r} at {position} overruns its parent")
        yield kind, position + header, position + size
        position += size


def child(data, body, end, kind):
    return next(((b, e) for k, b, e in boxes(data, body, end) if k == kind), None)


def read_movie(data):
    """The moov's timescale and, per trak: handler, media timescale and duration, edit list
    entries [(segment duration, media_time)], and where those fields sit (for rewriting)."""
    moov = child(data, 0, len(data), b"moov")
    if moov is None:
        raise ValueError("no moov box: the file was not finalised")
    mvhd_body, _ = child(data, *moov, b"mvhd")
    version = data[mvhd_body]
    movie = {"timescale": struct.unpack_from(">I", data, mvhd_body + (20 if version else 12))[0],
             "duration_at": (mvhd_body + (24 if version else 16), version), "tracks": []}
    for kind, body, end in boxes(data, *moov):
        if kind != b"trak":
            continue
        tkhd_body, _ = child(data, body, end, b"tkhd")
        tkhd_version = data[tkhd_body]
        mdia = child(data, body, end, b"mdia")
        mdhd_body, _ = child(data, *mdia, b"mdhd")
        hdlr_body, _ = child(data, *mdia, b"hdlr")
        mdhd_version = data[mdhd_body]
        timescale, duration = struct.unpack_from(">IQ" if mdhd_version else ">II", data,
                                                 mdhd_body + (20 if mdhd_version else 12))
        track = {"handler": data[hdlr_body + 8:hdlr_body + 12].decode("latin-1"),
                 "timescale": timescale, "media_duration": duration, "edits": [],
                 "tkhd_duration_at": (tkhd_body + (28 if tkhd_version else 20), tkhd_version)}
        edts = child(data, body, end, b"edts")
        elst = child(data, *edts, b"elst") if edts else None
        if elst:
            elst_version = data[elst[0]]
            count = struct.unpack_from(">I", data, elst[0] + 4)[0]
            entry_format = ">Qq" if elst_version else ">Ii"
            entry_size = 20 if elst_version else 12
            for index in range(count):
                at = elst[0] + 8 + index * entry_size
                segment_duration, media_time = struct.unpack_from(entry_format, data, at)
                track["edits"].append({"duration": segment_duration, "media_time": media_time,
                                       "at": at, "format": entry_format})
        movie["tracks"].append(track)
    return movie


def audio_track(movie):
    tracks = [t for t in movie["tracks"] if t["handler"] == "soun"]
    if len(tracks) != 1:
        raise ValueError(f"expected one audio track, found {len(tracks)}")
    return tracks[0]


def write_duration(data, where, value):
    offset, version = where
    struct.pack_into(">Q" if version else ">I", data, offset, value)


def write_priming_into_edit_list(path, priming_samples):
    """Make the audio track's media edit start after the priming, so players skip it.

    mp4mux always writes an edit list ([an empty edit for a late start,] one media edit from
    media_time 0). Its media edit gets media_time = the priming in the track's timescale and
    a duration shorter by as much; the track's and movie's durations follow."""
    with open(path, "rb") as file:
        data = bytearray(file.read())
    movie = read_movie(data)
    audio = audio_track(movie)
    media_edits = [edit for edit in audio["edits"] if edit["media_time"] != -1]
    if len(media_edits) != 1:
        raise ValueError(f"expected one media edit in the audio track, found {audio['edits']}")
    edit = media_edits[0]
    priming = priming_samples * audio["timescale"] // SAMPLE_RATE
    if edit["media_time"] not in (0, priming):
        raise ValueError(f"the audio edit already starts at media_time {edit['media_time']}")
    if edit["media_time"] == priming:
        return  # the muxer did it (a GStreamer newer than 1.22)
    shown = audio["media_duration"] - priming  # in the media timescale
    edit_duration = shown * movie["timescale"] // audio["timescale"]
    struct.pack_into(edit["format"], data, edit["at"], edit_duration, priming)
    track_duration = sum(e["duration"] for e in audio["edits"] if e is not edit) + edit_duration
    write_duration(data, audio["tkhd_duration_at"], track_duration)
    others = [struct.unpack_from(">Q" if v else ">I", data, o)[0]
              for t in movie["tracks"] if t is not audio for o, v in [t["tkhd_duration_at"]]]
    write_duration(data, movie["duration_at"], max(others + [track_duration]))
    with open(path, "r+b") as file:
        file.write(data)


# ---- recording ------------------------------------------------------------------------------

def mark_times(seconds):
    """When the sources flash and beep: each whole second strictly inside the recording."""
    return [second * Gst.SECOND for second in range(1, int(math.ceil(seconds)))]


def control(element, property_name, points):
    """Step the property through (time, value) points, applied at each buffer's timestamp."""
    source = GstController.InterpolationControlSource(mode=GstController.InterpolationMode.NONE)
    for time, value in points:
        source.set(time, value)
    element.add_control_binding(GstController.DirectControlBinding.new_absolute(element, property_name, source))
    return source


def record(output, seconds, encoder_name):
    """Record `seconds` of the live sources into output; returns when the file is complete."""
    pipeline = Gst.parse_launch(
        f"videotestsrc name=camera is-live=true pattern=solid-color foreground-color={BLACK} "
        f"! video/x-raw,width={WIDTH},height={HEIGHT},framerate={FRAMES_PER_SECOND}/1 ! videoconvert "
        f"! queue ! vtenc realtime=true ! queue ! mp4mux name=mux ! filesink location={output} "
        f"audiotestsrc name=microphone is-live=true wave=sine freq=1000 volume=0 "
        f"samplesperbuffer={SAMPLES_PER_BUFFER} ! audio/x-raw,rate={SAMPLE_RATE},channels={CHANNELS} "
        f"! audioconvert ! queue ! {encoder_name} ! queue ! mux.")
    # The same control point times for both sources: the flash and the beep carry the same
    # capture timestamps, which is what the smoke check finds again in the decoded file.
    frame = Gst.SECOND // FRAMES_PER_SECOND
    flashes, beeps = [(0, BLACK)], [(0, 0.0)]
    for time in mark_times(seconds):
        flashes += [(time, WHITE), (time + frame, BLACK)]
        beeps += [(time, BEEP_VOLUME), (time + int(BEEP_SECONDS * Gst.SECOND), 0.0)]
    keep_alive = [control(pipeline.get_by_name("camera"), "foreground-color", flashes),
                  control(pipeline.get_by_name("microphone"), "volume", beeps)]
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    message = bus.timed_pop_filtered(int(seconds * Gst.SECOND), Gst.MessageType.ERROR | Gst.MessageType.EOS)
    if message is None:
        # Stop the live sources with EOS and wait until it has come through mp4mux: only then
        # is the moov box written.
        pipeline.send_event(Gst.Event.new_eos())
        message = bus.timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.ERROR | Gst.MessageType.EOS)
    pipeline.set_state(Gst.State.NULL)
    del keep_alive
    if message is None:
        fail("the pipeline did not finish within 30 s of EOS")
    if message.type == Gst.MessageType.ERROR:
        error, debug = message.parse_error()
        fail(f"recording failed: {error.message}\n{debug}")


# ---- the smoke checks -----------------------------------------------------------------------

def ffprobe_frames(lavfi_graph, tag):
    """(time, value of tag) of each frame FFmpeg's filter graph produces."""
    result = subprocess.run(
        ["ffprobe", "-v", "error", "-f", "lavfi", "-i", lavfi_graph, "-show_entries",
         f"frame=pts_time:frame_tags={tag}", "-of", "json"],
        check=True, capture_output=True, text=True)
    frames = json.loads(result.stdout)["frames"]
    return [(float(f["pts_time"]), float(f.get("tags", {}).get(tag, "-inf"))) for f in frames]


def onsets(samples, threshold, min_gap):
    """Times where the value first rises above threshold, at least min_gap after the last."""
    found = []
    was_above = False
    for time, value in samples:
        above = value > threshold
        if above and not was_above and (not found or time - found[-1] >= min_gap):
            found.append(time)
        was_above = above
    return found


def check_av_sync(path, expected_marks):
    """Decode with FFmpeg (edit lists applied) and pair each flash with its beep."""
    # movie=/amovie= take a filter-graph string: keep the path free of its special characters.
    if any(c in path for c in ":,;'[]\\"):
        fail(f"the file name {path} cannot go into an FFmpeg filter graph")
    luma = ffprobe_frames(f"movie={path},signalstats", "lavfi.signalstats.YAVG")
    # 1 ms windows (48 samples): the beep's onset is measured to the millisecond.
    loudness = ffprobe_frames(f"amovie={path},pan=mono|c0=c0,asetnsamples=n={SAMPLE_RATE // 1000},"
                              f"astats=metadata=1:reset=1", "lavfi.astats.Overall.RMS_level")
    darkest, brightest = min(v for _, v in luma), max(v for _, v in luma)
    flashes = onsets(luma, (darkest + brightest) / 2, 0.5)
    # Half the beep's steady amplitude (-6 dB): well above AAC's pre-echo before the onset.
    loudest = max(v for _, v in loudness)
    beeps = onsets(loudness, loudest - 6.0, 0.5)
    frame_ms = 1000.0 / FRAMES_PER_SECOND
    print(f"flashes found at {[round(t, 3) for t in flashes]} s, beeps at {[round(t, 3) for t in beeps]} s")
    if len(flashes) != expected_marks or len(beeps) != expected_marks:
        fail(f"expected {expected_marks} flashes and beeps, found {len(flashes)} and {len(beeps)}")
    worst = 0.0
    for number, (flash, beep) in enumerate(zip(flashes, beeps), start=1):
        offset_ms = (beep - flash) * 1000
        worst = max(worst, abs(offset_ms))
        print(f"A/V offset: flash {number} at {flash:.3f} s, beep at {beep:.3f} s: {offset_ms:+.1f} ms")
    if worst > frame_ms:
        fail(f"audio and video are {worst:.1f} ms apart, more than a frame ({frame_ms:.1f} ms)")
    # Stricter, and what catches unskipped priming (avenc_aac's 21 ms fit in a frame): the beep
    # starts on its exact sample, the flash on the first frame captured at or after the mark,
    # so a beep may come up to a frame before its flash but not after it (2 ms of slack for
    # the 1 ms windows and the muxer's rounding).
    latest_ms = max((beep - flash) * 1000 for flash, beep in zip(flashes, beeps))
    if latest_ms > 2.0:
        fail(f"a beep comes {latest_ms:.1f} ms after its flash: the audio is late (priming not skipped?)")
    print(f"A/V sync: OK, every beep within {worst:.1f} ms of its flash (limit one frame, {frame_ms:.1f} ms)")


def check_edit_list(path, priming_samples):
    with open(path, "rb") as file:
        movie = read_movie(file.read())
    audio = audio_track(movie)
    media_times = [e["media_time"] for e in audio["edits"] if e["media_time"] != -1]
    expected = priming_samples * audio["timescale"] // SAMPLE_RATE
    print(f"audio edit list: {[(e['duration'], e['media_time']) for e in audio['edits']]} "
          f"(duration in 1/{movie['timescale']} s, media_time in 1/{audio['timescale']} s); "
          f"encoder priming {priming_samples} samples at {SAMPLE_RATE} Hz")
    if media_times != [expected]:
        fail(f"the audio edit list's media_time is {media_times}, not the priming {expected}")
    print(f"edit list: OK, the audio track skips the {priming_samples} priming samples")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("output", nargs="?", default=DEFAULT_OUTPUT, help=f"default {DEFAULT_OUTPUT}")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to record (default 10)")
    parser.add_argument("--aac-encoder", choices=AAC_ENCODERS, help="default: the first one installed")
    parser.add_argument("--smoke", action="store_true", help="record 4 s into a temporary file and check it")
    options = parser.parse_args()

    require_elements(["videotestsrc", "audiotestsrc", "videoconvert", "audioconvert", "queue",
                      "mp4mux", "filesink"])
    encoder_name = choose_aac_encoder(options.aac_encoder)
    if options.smoke and shutil.which("ffprobe") is None:
        fail("ffprobe is missing: install the Debian package ffmpeg")
    priming = measure_encoder_priming(encoder_name)

    output, seconds = options.output, options.seconds
    if options.smoke:
        smoke_dir = tempfile.mkdtemp(prefix="swiftvt-av-recording-")
        atexit.register(shutil.rmtree, smoke_dir, True)
        output, seconds = os.path.join(smoke_dir, "recording.mp4"), 4.0
    partial = output + ".part"
    record(partial, seconds, encoder_name)
    write_priming_into_edit_list(partial, priming)
    os.replace(partial, output)

    with open(output, "rb") as file:
        movie = read_movie(file.read())
    handlers = sorted(t["handler"] for t in movie["tracks"])
    print(f"wrote {output}: {os.path.getsize(output)} bytes, tracks {handlers}, H.264 by vtenc realtime=true, "
          f"AAC by {encoder_name} (priming {priming} samples, skipped by the audio edit list)")
    if options.smoke:
        if handlers != ["soun", "vide"]:
            fail(f"expected an audio and a video track, found {handlers}")
        check_edit_list(output, priming)
        check_av_sync(output, len(mark_times(seconds)))
        print("audio-video-recording: OK")


if __name__ == "__main__":
    main()
