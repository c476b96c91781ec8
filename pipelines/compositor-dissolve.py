#!/usr/bin/env python3
"""Seed 001, a custom compositor's job: a one-second cross-dissolve between two H.264 clips.

    pipelines/compositor-dissolve.py [OUTPUT.mp4]                          # two generated clips
    pipelines/compositor-dissolve.py --clip-a A.mp4 --clip-b B.mp4 [OUTPUT.mp4]
    pipelines/compositor-dissolve.py --smoke                               # into a temp file, checked

Both clips are decoded by vtdec, mixed by GStreamer's compositor and encoded by vtenc into an
MP4 file (mp4mux). The timeline, 3 s at 30 fps, 320x240:

    0 s ------- 1 s ------- 2 s ------- 3 s
    | A only    | dissolve  | B only    |
                  A's alpha 1 -> 0 over B

The dissolve is the seed's "tweening": a GstController InterpolationControlSource in linear mode,
bound with a DirectControlBinding to the `alpha` property of clip A's compositor sink pad (A has
the higher zorder, so it is drawn over B). Key points: alpha 1 at 0 s and at 1 s, 0 at 2 s.
compositor samples its pads' controlled properties at the stream time of each output frame, so
the key points are positions on the output timeline; frame 45 (1.5 s) gets alpha 0.5.

Clip B starts where the dissolve starts, as in an editor: the overlap of A's tail and B's head is
the dissolve. Each clip plays from its own beginning and lasts 2 s (A 0-2 s, B 1-3 s); B is
placed on the timeline with a pad offset of 1 s on its compositor sink pad, which moves its
running time (not its timestamps). The alternative, both clips running from 0, would show B from
its second 1 and waste its first second under an opaque A. After A's 2 s the A branch ends
(EOS) and compositor draws B alone until B ends at 3 s, which ends the output: 90 frames.

Clips are read by parsebin (any container or elementary stream it can demultiplex and parse) and
decoded by a vtdec made by name here, not by decodebin's autoplugging, so vtdec is certainly the
decoder. Longer clips are cut after the seconds the timeline uses. Without --clip-a/--clip-b the
script makes its two clips first (videotestsrc's colour bars and a moving ball, encoded by vtenc
into temporary MP4 files).

--smoke (what `meson test` runs) checks the result with an independent decoder (FFmpeg's): the
output has 90 frames and lasts 3 s; its frame before the dissolve matches A and not B, its frame
in the middle of the dissolve matches the 50/50 blend of A and B computed here from the decoded
source frames (and matches neither alone), its frame after matches B and not A (PSNR of the luma
plane). It prints the measured PSNRs.

Needs Debian's python3 (python3-gi, gir1.2-gstreamer-1.0, gir1.2-gst-plugins-base-1.0) and, for
--smoke, ffmpeg/ffprobe. With SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so that plugin is used
(pipelines/lib/plugin_env.py), else the installed one.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree from the helper's import
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import plugin_env  # noqa: E402

plugin_env.use_swiftvt_plugin()  # before Gst.init, which reads GST_PLUGIN_PATH and GST_REGISTRY

import gi  # noqa: E402

gi.require_version("Gst", "1.0")
gi.require_version("GstController", "1.0")
gi.require_version("GstPbutils", "1.0")
from gi.repository import GLib, Gst, GstController, GstPbutils  # noqa: E402

WIDTH, HEIGHT, FPS = 320, 240, 30
DISSOLVE_START = 1 * Gst.SECOND
DISSOLVE_END = 2 * Gst.SECOND
TIMELINE_END = 3 * Gst.SECOND
# What each clip contributes: A from its start to the end of the dissolve, B from its start
# (placed at DISSOLVE_START) to the end of the timeline.
CLIP_A_USED = DISSOLVE_END
CLIP_B_USED = TIMELINE_END - DISSOLVE_START
# 4000 kbit/s is generous for 320x240: the smoke checks compare pictures after vtenc, and the
# compression loss must stay far below the difference between A, B and their blend.
BITRATE_KBIT = 4000
PIPELINE_TIMEOUT_SECONDS = 120

# --smoke thresholds (PSNR of the luma plane, dB). A frame "matches" a reference above
# MATCH_MIN_DB, and must be at least DISCRIMINATION_DB closer to it than to the wrong references.
# At this bit rate x264 keeps these pictures above 45 dB; 38 dB still rejects a blend with B one
# frame early or late (about 33 dB) or with alpha off by 0.05 (about 35 dB).
MATCH_MIN_DB = 38.0
DISCRIMINATION_DB = 10.0


class DissolveError(Exception):
    """A failure with a message for the user (a clip that cannot be used, a pipeline error)."""


def seconds(nanoseconds: int) -> float:
    return nanoseconds / Gst.SECOND


def dissolve_alpha_at(timestamp: int) -> float:
    """Clip A's alpha at a position of the output timeline: what the control source is given."""
    if timestamp <= DISSOLVE_START:
        return 1.0
    if timestamp >= DISSOLVE_END:
        return 0.0
    return 1.0 - (timestamp - DISSOLVE_START) / (DISSOLVE_END - DISSOLVE_START)


def run_pipeline(pipeline: Gst.Pipeline, what: str) -> None:
    """Plays the pipeline to EOS; raises DissolveError with GStreamer's message on ERROR."""
    bus = pipeline.get_bus()
    try:
        if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
            # The ERROR message that explains why is on the bus.
            message = bus.pop_filtered(Gst.MessageType.ERROR)
            raise DissolveError(f"{what}: could not start"
                                + (f": {message.parse_error()[0].message}" if message else ""))
        message = bus.timed_pop_filtered(PIPELINE_TIMEOUT_SECONDS * Gst.SECOND,
                                         Gst.MessageType.EOS | Gst.MessageType.ERROR)
        if message is None:
            raise DissolveError(f"{what}: no end within {PIPELINE_TIMEOUT_SECONDS} s")
        if message.type == Gst.MessageType.ERROR:
            error, debug = message.parse_error()
            raise DissolveError(f"{what}: {error.message} (from {message.src.get_name()}; {debug})")
    finally:
        pipeline.set_state(Gst.State.NULL)


def make_element(factory: str, **properties) -> Gst.Element:
    element = Gst.ElementFactory.make(factory, None)
    if element is None:
        raise DissolveError(f"GStreamer has no element {factory!r} (is the plugin providing it installed?)")
    for name, value in properties.items():
        # Gst.util_set_object_arg parses enum nicks ("black") as gst-launch-1.0 does.
        if isinstance(value, str):
            Gst.util_set_object_arg(element, name.replace("_", "-"), value)
        else:
            element.set_property(name.replace("_", "-"), value)
    return element


def make_test_clip(path: str, frames: int, **videotestsrc_properties) -> None:
    """A generated H.264 clip in MP4, encoded by vtenc: the default input of the dissolve."""
    description = (f"videotestsrc num-buffers={frames} "
                   + " ".join(f"{name.replace('_', '-')}={value}" for name, value in videotestsrc_properties.items())
                   + f" ! video/x-raw,format=I420,width={WIDTH},height={HEIGHT},framerate={FPS}/1"
                   f" ! vtenc bitrate={BITRATE_KBIT} ! mp4mux ! filesink location=\"{path}\"")
    run_pipeline(Gst.parse_launch(description), f"making the test clip {path}")


def check_clip(path: str, label: str, used: int) -> None:
    """One clear error naming the file when a clip cannot be read, has no H.264 video, or is too short."""
    if not os.path.isfile(path):
        raise DissolveError(f"clip {label} {path}: no such file")
    discoverer = GstPbutils.Discoverer.new(30 * Gst.SECOND)
    try:
        info = discoverer.discover_uri(Gst.filename_to_uri(os.path.abspath(path)))
    except GLib.Error as error:
        raise DissolveError(f"clip {label} {path}: cannot be read: {error.message}") from None
    video = info.get_video_streams()
    if not video:
        raise DissolveError(f"clip {label} {path}: has no video stream")
    caps = video[0].get_caps()
    if caps is None or caps.get_structure(0).get_name() != "video/x-h264":
        kind = caps.get_structure(0).get_name() if caps else "unknown"
        raise DissolveError(f"clip {label} {path}: its video is not H.264 ({kind})")
    # compositor places pictures by their time stamps. A container has them; an elementary stream
    # only with timing in its SPS (VUI), which the parser then reports as a frame rate.
    in_container = isinstance(info.get_stream_info(), GstPbutils.DiscovererContainerInfo)
    if not in_container and video[0].get_framerate_num() == 0:
        raise DissolveError(f"clip {label} {path}: an H.264 elementary stream without timing (no frame rate "
                            f"in its SPS); put it in a container first, e.g. ffmpeg -r 30 -i {path} -c copy clip.mp4")
    duration = info.get_duration()
    # Elementary streams may report no duration; then a short clip just ends early.
    if duration not in (0, Gst.CLOCK_TIME_NONE) and duration + Gst.SECOND // FPS // 2 < used:
        raise DissolveError(f"clip {label} {path}: lasts {seconds(duration):.2f} s; the timeline uses its "
                            f"first {seconds(used):.2f} s")


class ClipBranch:
    """filesrc ! parsebin ! vtdec, ending at the compositor pad given; keeps the first `used` ns."""

    def __init__(self, pipeline: Gst.Pipeline, path: str, used: int, compositor_pad: Gst.Pad):
        self.used = used
        self.frames_decoded = 0
        self.source = make_element("filesrc", location=path)
        self.parser = make_element("parsebin")
        self.decoder = make_element("vtdec")
        for element in (self.source, self.parser, self.decoder):
            pipeline.add(element)
        self.source.link(self.parser)
        # parsebin's pads appear once it has found the stream; the first H.264 one is the clip.
        self.parser.connect("pad-added", self._parser_pad_added)
        decoder_src = self.decoder.get_static_pad("src")
        decoder_src.link(compositor_pad)
        decoder_src.add_probe(Gst.PadProbeType.BUFFER, self._keep_used_part)

    def _parser_pad_added(self, _parser, pad: Gst.Pad) -> None:
        caps = pad.get_current_caps() or pad.query_caps(None)
        sink = self.decoder.get_static_pad("sink")
        if caps.get_structure(0).get_name() == "video/x-h264" and not sink.is_linked():
            pad.link(sink)

    def _keep_used_part(self, pad: Gst.Pad, info: Gst.PadProbeInfo) -> Gst.PadProbeReturn:
        buffer = info.get_buffer()
        # The position in the clip is the stream time, not the timestamp: an MP4 edit list (B
        # pictures) makes the timestamps start after 0, and the segment says where.
        segment_event = pad.get_sticky_event(Gst.EventType.SEGMENT, 0)
        position = buffer.pts
        if segment_event is not None and buffer.pts != Gst.CLOCK_TIME_NONE:
            position = segment_event.parse_segment().to_stream_time(Gst.Format.TIME, buffer.pts)
        if position != Gst.CLOCK_TIME_NONE and position >= self.used:
            # The rest of the clip is not on the timeline: end the branch here. Once the pad is
            # EOS vtdec's next push returns EOS, which stops the demuxer and the decoding too.
            pad.push_event(Gst.Event.new_eos())
            return Gst.PadProbeReturn.DROP
        self.frames_decoded += 1
        return Gst.PadProbeReturn.OK


def dissolve(clip_a: str, clip_b: str, output: str) -> tuple:
    """Builds and runs the dissolve into `output`; returns the frames vtdec gave each branch."""
    pipeline = Gst.Pipeline.new("compositor-dissolve")
    compositor = make_element("compositor", background="black")
    # The output format decides the blending: I420 (what vtenc takes) with a per-pad alpha.
    output_caps = make_element("capsfilter", caps=Gst.Caps.from_string(
        f"video/x-raw,format=I420,width={WIDTH},height={HEIGHT},framerate={FPS}/1,pixel-aspect-ratio=1/1"))
    encoder = make_element("vtenc", bitrate=BITRATE_KBIT)
    muxer = make_element("mp4mux")
    sink = make_element("filesink", location=output)
    for element in (compositor, output_caps, encoder, muxer, sink):
        pipeline.add(element)
    for upstream, downstream in ((compositor, output_caps), (output_caps, encoder), (encoder, muxer), (muxer, sink)):
        if not upstream.link(downstream):
            raise DissolveError(f"cannot link {upstream.get_name()} to {downstream.get_name()}")

    # Both clips are scaled to the output size; A is drawn over B.
    pad_b = compositor.request_pad_simple("sink_%u")
    pad_b.set_property("zorder", 0)
    pad_a = compositor.request_pad_simple("sink_%u")
    pad_a.set_property("zorder", 1)
    for pad in (pad_a, pad_b):
        pad.set_property("width", WIDTH)
        pad.set_property("height", HEIGHT)
    # B's first frame at the start of the dissolve (see the docstring).
    pad_b.set_offset(DISSOLVE_START)

    # The tween: A's alpha interpolated linearly between the key points, on the output timeline.
    alpha_ramp = GstController.InterpolationControlSource()
    alpha_ramp.set_property("mode", GstController.InterpolationMode.LINEAR)
    for key_point in (0, DISSOLVE_START, DISSOLVE_END):
        alpha_ramp.set(key_point, dissolve_alpha_at(key_point))
    # A direct binding maps the control value 0..1 onto the property's range, which for alpha is 0..1.
    pad_a.add_control_binding(GstController.DirectControlBinding.new(pad_a, "alpha", alpha_ramp))

    branch_a = ClipBranch(pipeline, clip_a, CLIP_A_USED, pad_a)
    branch_b = ClipBranch(pipeline, clip_b, CLIP_B_USED, pad_b)
    run_pipeline(pipeline, "the dissolve")
    return branch_a.frames_decoded, branch_b.frames_decoded


# --- --smoke: checks with FFmpeg as the independent decoder -------------------------------------

def decode_luma_frames(path: str) -> list:
    """Every frame's Y plane, decoded by FFmpeg (libavcodec), in presentation order."""
    result = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-fps_mode", "passthrough",
                             "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{WIDTH}x{HEIGHT}", "-"],
                            capture_output=True)
    if result.returncode != 0:
        raise DissolveError(f"ffmpeg cannot decode {path}: {result.stderr.decode(errors='replace').strip()}")
    luma_size = WIDTH * HEIGHT
    frame_size = luma_size * 3 // 2
    data = result.stdout
    return [data[start:start + luma_size] for start in range(0, len(data) - frame_size + 1, frame_size)]


def psnr(picture: bytes, reference: bytes) -> float:
    squared_error = sum((a - b) * (a - b) for a, b in zip(picture, reference))
    if squared_error == 0:
        return math.inf
    return 10 * math.log10(255 * 255 * len(picture) / squared_error)


def blend(over: bytes, under: bytes, alpha: float) -> bytes:
    """`over` with opacity alpha on `under`, rounded to 8 bits: the expected compositor output."""
    return bytes(int(alpha * a + (1 - alpha) * b + 0.5) for a, b in zip(over, under))


def probe_output(path: str) -> tuple:
    """ffprobe's count of decoded video frames and the file's duration in seconds."""
    result = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
                             "-show_entries", "stream=codec_name,nb_read_frames:format=duration",
                             "-of", "default=noprint_wrappers=1", path], capture_output=True, text=True)
    if result.returncode != 0:
        raise DissolveError(f"ffprobe cannot read {path}: {result.stderr.strip()}")
    fields = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    if fields.get("codec_name") != "h264":
        raise DissolveError(f"{path}: the video is not H.264 ({fields.get('codec_name')})")
    return int(fields["nb_read_frames"]), float(fields["duration"])


def smoke_check(clip_a: str, clip_b: str, output: str, frames_decoded: tuple) -> list:
    """Returns the failed checks (empty when the output is right); prints the measurements."""
    failures = []
    expected_frames = TIMELINE_END * FPS // Gst.SECOND

    for label, decoded, used in (("A", frames_decoded[0], CLIP_A_USED), ("B", frames_decoded[1], CLIP_B_USED)):
        expected = used * FPS // Gst.SECOND
        print(f"dissolve: vtdec decoded {decoded} frames of clip {label} onto the timeline (expected {expected})")
        if decoded != expected:
            failures.append(f"vtdec gave {decoded} frames of clip {label}, expected {expected}")

    frame_count, duration = probe_output(output)
    print(f"dissolve: output {frame_count} frames (expected {expected_frames}), "
          f"{duration:.3f} s (expected {seconds(TIMELINE_END):.3f} s +- one frame)")
    if frame_count != expected_frames:
        failures.append(f"the output has {frame_count} frames, expected {expected_frames}")
    if abs(duration - seconds(TIMELINE_END)) > 1.0 / FPS + 1e-6:
        failures.append(f"the output lasts {duration:.3f} s, expected {seconds(TIMELINE_END):.3f} s")

    output_frames = decode_luma_frames(output)
    frames_a = decode_luma_frames(clip_a)
    frames_b = decode_luma_frames(clip_b)
    if len(output_frames) != expected_frames:
        failures.append(f"FFmpeg decoded {len(output_frames)} output frames, expected {expected_frames}")
        return failures

    def frame_time(index: int) -> int:
        return index * Gst.SECOND // FPS

    def shown_sources(index: int) -> tuple:
        """Clip A's and clip B's pictures on the timeline at output frame `index` (None: not on it)."""
        # In frame counts: a nanosecond time stamp (1/30 s rounded down) converted back would
        # round down to the previous frame.
        a_frames_used = CLIP_A_USED * FPS // Gst.SECOND
        b_first_frame = DISSOLVE_START * FPS // Gst.SECOND
        a = frames_a[index] if index < a_frames_used else None
        b = frames_b[index - b_first_frame] if index >= b_first_frame else None
        return a, b

    def expected_picture(index: int) -> bytes:
        a, b = shown_sources(index)
        if a is None or b is None:
            return a if b is None else b
        return blend(a, b, dissolve_alpha_at(frame_time(index)))

    # One frame in the middle of each stretch: before the dissolve, half way through it, after it.
    # Where a clip is not on the timeline it is compared by the picture nearest in time (B's first,
    # A's last): what matters is how far the output is from each source.
    checkpoints = (("before", DISSOLVE_START // 2 * FPS // Gst.SECOND),
                   ("mid", (DISSOLVE_START + DISSOLVE_END) // 2 * FPS // Gst.SECOND),
                   ("after", (DISSOLVE_END + TIMELINE_END) // 2 * FPS // Gst.SECOND))
    for stretch, index in checkpoints:
        frame = output_frames[index]
        alpha = dissolve_alpha_at(frame_time(index))
        a, b = shown_sources(index)
        a = a if a is not None else frames_a[-1]
        b = b if b is not None else frames_b[0]
        vs_a, vs_b, a_vs_b = psnr(frame, a), psnr(frame, b), psnr(a, b)
        heading = (f"dissolve: frame {index} ({stretch}, t={seconds(frame_time(index)):.3f} s, "
                   f"alpha {alpha:.2f}): PSNR-Y")
        if stretch == "mid":
            vs_blend = psnr(frame, blend(a, b, alpha))
            print(f"{heading} vs {alpha:.2f}/{1 - alpha:.2f} blend {vs_blend:.1f} dB, vs A {vs_a:.1f} dB, "
                  f"vs B {vs_b:.1f} dB (sources A vs B {a_vs_b:.1f} dB)")
            # Whether the match is told apart from the sources alone matters only once it matches.
            if vs_blend < MATCH_MIN_DB:
                failures.append(f"frame {index} is not the blend of A and B (PSNR {vs_blend:.1f} dB < {MATCH_MIN_DB})")
                continue
            for name, value in (("A", vs_a), ("B", vs_b)):
                if value > vs_blend - DISCRIMINATION_DB:
                    failures.append(f"frame {index} is about as close to {name} alone ({value:.1f} dB) "
                                    f"as to the blend ({vs_blend:.1f} dB)")
        else:
            print(f"{heading} vs A {vs_a:.1f} dB, vs B {vs_b:.1f} dB (sources A vs B {a_vs_b:.1f} dB)")
            expected, other = ("A", "B") if stretch == "before" else ("B", "A")
            matching, wrong = (vs_a, vs_b) if expected == "A" else (vs_b, vs_a)
            if matching < MATCH_MIN_DB:
                failures.append(f"frame {index} ({stretch}) does not match {expected} (PSNR "
                                f"{matching:.1f} dB < {MATCH_MIN_DB})")
            elif wrong > matching - DISCRIMINATION_DB:
                failures.append(f"frame {index} ({stretch}) is about as close to {other} ({wrong:.1f} dB) "
                                f"as to {expected} ({matching:.1f} dB)")

    # Then every frame against its expected picture: the ramp's shape and B's placement throughout.
    worst_psnr, worst_index = min((psnr(output_frames[index], expected_picture(index)), index)
                                  for index in range(expected_frames))
    print(f"dissolve: all {expected_frames} frames vs their expected picture (A, blend at alpha(t), B): "
          f"lowest PSNR-Y {worst_psnr:.1f} dB (frame {worst_index})")
    if worst_psnr < MATCH_MIN_DB:
        failures.append(f"frame {worst_index} is not its expected picture (PSNR {worst_psnr:.1f} dB < {MATCH_MIN_DB})")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default="swiftvt-dissolve.mp4", help="the MP4 to write")
    parser.add_argument("--clip-a", help="first clip (H.264 in MP4 or another container parsebin reads)")
    parser.add_argument("--clip-b", help="second clip, dissolved in over the first")
    parser.add_argument("--smoke", action="store_true",
                        help="generated clips into a temporary file, checked with FFmpeg (what meson test runs)")
    arguments = parser.parse_args()
    if (arguments.clip_a is None) != (arguments.clip_b is None):
        parser.error("--clip-a and --clip-b go together")
    if arguments.smoke and arguments.clip_a:
        parser.error("--smoke makes its own clips (its checks know what they contain)")

    Gst.init(None)
    plugin_env.require_swiftvt_plugin(Gst)
    with tempfile.TemporaryDirectory(prefix="swiftvt-dissolve-") as work_dir:
        try:
            if arguments.clip_a:
                clip_a, clip_b = arguments.clip_a, arguments.clip_b
            else:
                # Two pictures far apart (a low PSNR between them), so that the checks can tell
                # which one the output shows: still colour bars, and a ball moving over blue.
                clip_a = os.path.join(work_dir, "clip-a.mp4")
                clip_b = os.path.join(work_dir, "clip-b.mp4")
                make_test_clip(clip_a, CLIP_A_USED * FPS // Gst.SECOND, pattern="smpte")
                make_test_clip(clip_b, CLIP_B_USED * FPS // Gst.SECOND, pattern="ball", background_color="0xff2040a0")
            check_clip(clip_a, "A", CLIP_A_USED)
            check_clip(clip_b, "B", CLIP_B_USED)
            output = os.path.join(work_dir, "dissolve.mp4") if arguments.smoke else arguments.output
            frames_decoded = dissolve(clip_a, clip_b, output)
            if not arguments.smoke:
                print(f"dissolve: wrote {output} ({seconds(TIMELINE_END):.0f} s at {FPS} fps, {WIDTH}x{HEIGHT}; "
                      f"vtdec decoded {frames_decoded[0]} frames of A and {frames_decoded[1]} of B)")
                return 0
            failures = smoke_check(clip_a, clip_b, output, frames_decoded)
        except DissolveError as error:
            print(f"dissolve: {error}", file=sys.stderr)
            return 1
    if failures:
        for failure in failures:
            print(f"dissolve: FAILED: {failure}", file=sys.stderr)
        return 1
    print("dissolve: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
