"""The splice file (docs/farm.md) and INPUT's audio tracks into OUTPUT.

One pipeline: the spliced video through appsrc, and INPUT demuxed again by parsebin (no seek: the
same segments as the frame index's pass, so every stream's running time is the one the job
worked in), its audio pads through queues into the muxer's audio pads, copied as they are.

    appsrc (the splice) ------------------------------> MUXER.video_0 -> filesink OUTPUT.part
    filesrc INPUT ! parsebin -- audio k -> queue k ---> MUXER.audio_k
                             `- video, subtitles, ... -> fakesink

The muxer's timeline is the input's running time plus the frame index's audio lead, on every pad:
an audio track may start before running time zero (AAC's priming packet lies before the
demuxer's segment, which an MP4 edit list starts after it), and a muxer clips what lies before
zero. For MP4 and QuickTime, the edit lists are then set from what went in (mp4edits): the tracks
keep their places relative to each other, as in the input, and the output starts at its earliest
track. Matroska has no edit lists: its times are the muxer's timeline (the priming packet at 0
and the video after it, as FFmpeg writes such a copy).
"""
import os
import struct
import tempfile

from . import mp4edits
from .errors import JobError
from .frameindex import stream_kind
from .streams import OutputStreams

# Each audio queue holds up to this much while the muxer waits on the video or another track:
# one demuxer thread feeds every track, so the tracks' interleave in INPUT must fit in it.
AUDIO_QUEUE_BYTES = 64 * 1024 * 1024

# An audio track whose packets end this much before its segment's stop gets a note (ns): more
# than the rounding of a container's times.
SHORT_TRACK_NS = 2_000_000


def _muxer_segment(Gst, segment, offset):
    """`segment` as the muxer gets it: the same running time for every position, plus `offset`,
    with the start lowered by as much (a packet up to `offset` before the segment is not clipped:
    the edit lists present what the input presented) and no stop (a packet past it neither)."""
    lowered = min(segment.start, offset)
    result = Gst.Segment()
    result.init(Gst.Format.TIME)
    result.rate, result.applied_rate, result.flags = segment.rate, segment.applied_rate, segment.flags
    result.start = result.position = segment.start - lowered
    result.time = max(0, segment.time - lowered)
    result.base = segment.base + offset - lowered
    return result


class _AudioTrack:
    """One audio track on its way into the muxer: its segment made the muxer's, and what the edit
    list needs. Written by the demuxer's streaming thread, read after the pipeline stopped."""

    def __init__(self, Gst, number, queue, offset):
        self.Gst, self.number, self.queue, self.offset = Gst, number, queue, offset
        self.input_segment = None
        self.muxer_segment = None
        self.first_decode = self.start = None
        self.stop = None           # the input segment's stop, on the muxer's timeline (None: open)
        self.packets_end = None    # the last packet's end (None: its duration is unknown)
        self.buffers = 0
        self.failure = None        # why the track did not reach the muxer

    @property
    def end(self):
        """Where the input stops presenting the track: its segment's stop, or before it where the
        packets end sooner (qtdemux drops a last packet past the movie's duration); None: at the
        end of its media, as the muxer wrote it."""
        if self.stop is None or self.packets_end is None:
            return self.stop
        return min(self.stop, self.packets_end)

    def give_up(self, reason):
        """The track will not reach the muxer: end it, so that the muxer does not wait for it."""
        self.failure = reason
        self.queue.get_static_pad("sink").send_event(self.Gst.Event.new_eos())

    def probe(self, pad, info):
        Gst = self.Gst
        if info.type & Gst.PadProbeType.BUFFER:
            buffer = info.get_buffer()
            if buffer.pts == Gst.CLOCK_TIME_NONE or self.muxer_segment is None:
                return Gst.PadProbeReturn.OK
            pts = self.muxer_segment.to_running_time(Gst.Format.TIME, buffer.pts)
            if pts == Gst.CLOCK_TIME_NONE:
                # Before the muxer's zero: the muxer drops it. The frame index measured the lead
                # from the same demuxer, so this is never expected; a lost packet is an error.
                self.failure = self.failure or f"a packet at {buffer.pts / 1e9:.6f} s lies before the muxer's timeline"
                return Gst.PadProbeReturn.OK
            if self.buffers == 0:
                decode = buffer.dts if buffer.dts != Gst.CLOCK_TIME_NONE else buffer.pts
                self.first_decode = self.muxer_segment.to_running_time(Gst.Format.TIME, decode)
                # The input presents the track from its segment's start: a packet before it
                # (AAC's priming) is decoded, not heard.
                self.start = max(pts, self.muxer_segment.to_running_time(Gst.Format.TIME, self.input_segment.start))
            self.buffers += 1
            self.stop = None
            if self.input_segment.stop != Gst.CLOCK_TIME_NONE:
                self.stop = self.muxer_segment.to_running_time(Gst.Format.TIME, self.input_segment.stop)
            self.packets_end = pts + buffer.duration if buffer.duration != Gst.CLOCK_TIME_NONE else None
            return Gst.PadProbeReturn.OK
        event = info.get_event()
        if event.type != Gst.EventType.SEGMENT:
            return Gst.PadProbeReturn.OK
        self.input_segment = event.parse_segment()
        self.muxer_segment = _muxer_segment(Gst, self.input_segment, self.offset)
        replacement = Gst.Event.new_segment(self.muxer_segment)
        replacement.set_seqnum(event.get_seqnum())
        # The replacement goes straight to the queue; HANDLED marks the demuxer's segment as
        # delivered (DROP would leave it pending, and the pad would send it again before every
        # buffer). The original event's reference stays with the probe: one segment, once.
        peer = pad.get_peer()
        if peer is None:
            return Gst.PadProbeReturn.OK
        peer.send_event(replacement)
        return Gst.PadProbeReturn.HANDLED


# The splice file's codec (docs/farm.md) -> the caps of its access units.
SPLICE_CODECS = {b"avc1": "video/x-h264,stream-format=avc", b"hvc1": "video/x-h265,stream-format=hvc1"}


def mux(Gst, splice_path, output, probe_info, expected_frames, demux_path=None, streams=None):
    """The splice file (contract) and `streams.audio`'s tracks of `demux_path` into OUTPUT through
    `streams.muxer` (mp4mux without `streams`), written as a hidden temporary file beside OUTPUT
    and renamed to it once the muxer reached EOS. Returns what was written: frames, payload bytes
    and seconds of video (from the first frame's presentation time to the end of the last one's,
    the time stamps written: a variable frame rate is counted as it is), audio tracks copied, and
    notes for the user (lines) about what the copy could not keep."""
    streams = streams or OutputStreams("mp4mux", [])
    muxer, audio_count = streams.muxer, len(streams.audio)
    offset = streams.audio_lead  # the input's running time + this = the muxer's timeline
    with open(splice_path, "rb") as splice:
        magic = splice.read(8)
        if magic != b"SVTSPLIC":
            raise JobError(f"swiftvt-farm splice wrote no splice file ({magic!r})")
        version, = struct.unpack("<I", splice.read(4))
        codec = splice.read(4) if version >= 2 else b"avc1"  # version 1 carried H.264 only
        if codec not in SPLICE_CODECS:
            raise JobError(f"the splice file holds {codec!r}, neither H.264 (avc1) nor H.265 (hvc1)")
        width, height, codec_data_size = struct.unpack("<3I", splice.read(12))
        codec_data = splice.read(codec_data_size)
        segment_start, = struct.unpack("<q", splice.read(8))
        caps_text = (f"{SPLICE_CODECS[codec]},alignment=au,width={width},height={height},"
                     f"framerate={probe_info['fps_n']}/{probe_info['fps_d']},codec_data=(buffer){codec_data.hex()}")
        caps = Gst.Caps.from_string(caps_text)
        directory = os.path.dirname(os.path.abspath(output))
        fd, partial = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(output)}.", suffix=".part")
        os.close(fd)
        pipeline = None
        try:
            # The muxer's video pad named explicitly: linked by parse_launch before caps are known,
            # appsrc would get an audio request pad and fail to negotiate. codec_data goes in the
            # caps string (Gst.Caps.set_value cannot set a GstBuffer from PyGObject).
            pipeline = Gst.parse_launch(
                'appsrc name=src format=time handle-segment-change=true block=true '
                f'max-bytes=8000000 caps="{caps_text}" '
                f"! mux.video_0 {muxer} name=mux ! filesink name=out")
            pipeline.get_by_name("out").set_property("location", partial)
            muxing = pipeline.get_by_name("mux")
            source = pipeline.get_by_name("src")
            tracks = _add_audio(Gst, pipeline, muxing, demux_path, audio_count, offset) if audio_count else []
            bus = pipeline.get_bus()
            # An error in the demuxer's or the muxer's thread must not leave this thread blocked in
            # appsrc's push (block=true) with the muxer stopped: flushing appsrc unblocks it, and
            # the push returns the failure that the bus then explains.
            bus.enable_sync_message_emission()
            bus.connect("sync-message::error", lambda *_: source.send_event(Gst.Event.new_flush_start()))
            pipeline.set_state(Gst.State.PLAYING)
            frames = payload = 0
            first_pts, end, first_dts = None, None, None
            while True:
                head = splice.read(29)
                if not head:
                    break
                if len(head) < 29:
                    raise JobError("the splice file ends inside an access unit header")
                pts, dts, duration, is_sync, size = struct.unpack("<qqqBI", head)
                data = splice.read(size)
                if len(data) != size:
                    raise JobError("the splice file ends inside an access unit")
                # One copy, needed: the bytes become memory GStreamer owns (the buffer outlives them).
                buffer = Gst.Buffer.new_wrapped(data)
                buffer.pts, buffer.dts = pts, dts
                if duration >= 0:
                    buffer.duration = duration
                if not is_sync:
                    buffer.set_flags(Gst.BufferFlags.DELTA_UNIT)
                if frames == 0:
                    # The first buffer carries the segment (appsrc handle-segment-change): every
                    # PTS runs at the input's running time of its frame, plus the muxer
                    # timeline's offset.
                    segment = Gst.Segment()
                    segment.init(Gst.Format.TIME)
                    segment.start = segment.position = segment_start
                    segment.base = offset
                    first_dts = dts
                    flow = source.emit("push-sample", Gst.Sample.new(buffer, caps, segment, None))
                else:
                    flow = source.emit("push-buffer", buffer)
                if flow != Gst.FlowReturn.OK:
                    message = bus.timed_pop_filtered(Gst.SECOND, Gst.MessageType.ERROR)
                    raise JobError(f"{muxer} took no more video at frame {frames}: "
                                   + (f"{message.src.get_name()}: {_error_text(message)}"
                                      if message else flow.value_nick))
                frames += 1
                payload += size
                first_pts = pts if first_pts is None else min(first_pts, pts)
                end = max(end or 0, pts + max(duration, 0))
            source.emit("end-of-stream")
            message = bus.timed_pop_filtered(300 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
            pipeline.set_state(Gst.State.NULL)
            if message is None or message.type != Gst.MessageType.EOS:
                raise JobError(f"{muxer} did not finish: "
                               + (f"{message.src.get_name()}: {_error_text(message)}" if message
                                  else "no EOS in 300 s"))
            if frames != expected_frames:
                raise JobError(f"the spliced stream holds {frames} frames, the input {expected_frames}")
            notes = [_check_copied(track, demux_path, output, offset) for track in tracks]
            notes = [note for note in notes if note]
            if streams.edits_rewritten and frames:
                timeline = offset - segment_start  # the splice's time + this = the muxer's
                timings = [mp4edits.TrackTiming("vide", first_dts + timeline, first_pts + timeline, end + timeline)]
                timings += [mp4edits.TrackTiming("soun", t.first_decode, t.start, t.end) for t in tracks]
                mp4edits.rewrite(partial, timings)
            # mkstemp made the file private (0600); OUTPUT gets the mode any new file gets here.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(partial, 0o666 & ~umask)
            os.replace(partial, output)
            partial = None
        finally:
            if pipeline is not None:
                pipeline.set_state(Gst.State.NULL)
            if partial is not None:
                os.unlink(partial)
    return {"frames": frames, "payload": payload, "audio_tracks": audio_count, "notes": notes,
            "seconds": (end - first_pts) / 1e9 if frames else 0.0}


def _error_text(message):
    return message.parse_error()[0].message


def _check_copied(track, demux_path, output, offset):
    """JobError when the track did not reach the muxer whole; a note (or None) when the input's
    demuxer gave less of it than the input presents."""
    if track.failure or track.buffers == 0:
        raise JobError(f"{demux_path}'s audio track {track.number} was not copied: "
                       f"{track.failure or 'the demuxer delivered no packet of it'}")
    if track.stop is None or track.packets_end is None or track.stop - track.packets_end <= SHORT_TRACK_NS:
        return None
    # GStreamer 1.22's qtdemux drops the last packet of an AAC track whose edit list skips the
    # priming (it starts after the movie's duration in media time): said, not hidden.
    return (f"{demux_path}'s audio track {track.number}: the demuxer delivered packets up to "
            f"{(track.packets_end - offset) / 1e9:.3f} s, {(track.stop - track.packets_end) / 1e6:.0f} ms short of "
            f"the {(track.stop - offset) / 1e9:.3f} s its edit list presents: "
            f"{os.path.basename(output)}'s track ends there")


def _add_audio(Gst, pipeline, muxing, path, count, offset):
    """filesrc `path` ! parsebin, its first `count` audio pads through queues into the muxer's audio
    pads, every other pad into a fakesink. The muxer's pads are requested now, before PLAYING: a
    muxer takes no new pad once it has started writing, and with every pad present it waits for
    each track's first packet before it writes."""
    tracks = []
    for number in range(1, count + 1):
        queue = Gst.ElementFactory.make("queue")
        queue.set_property("max-size-buffers", 0)
        queue.set_property("max-size-time", 0)
        queue.set_property("max-size-bytes", AUDIO_QUEUE_BYTES)
        pipeline.add(queue)
        pad = muxing.request_pad_simple("audio_%u")
        if pad is None or queue.get_static_pad("src").link(pad) != Gst.PadLinkReturn.OK:
            raise JobError(f"{muxing.get_factory().get_name()} gave no audio pad for audio track {number}")
        tracks.append(_AudioTrack(Gst, number, queue, offset))
    source = Gst.ElementFactory.make("filesrc")
    source.set_property("location", path)
    parser = Gst.ElementFactory.make("parsebin")
    pipeline.add(source)
    pipeline.add(parser)
    source.link(parser)
    waiting = list(tracks)

    def pad_added(_, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        if stream_kind(caps) == "audio" and waiting:
            track = waiting.pop(0)
            pad.add_probe(Gst.PadProbeType.BUFFER | Gst.PadProbeType.EVENT_DOWNSTREAM, track.probe)
            result = pad.link(track.queue.get_static_pad("sink"))
            if result != Gst.PadLinkReturn.OK:
                track.give_up(f"it does not link to the queue before the muxer ({result.value_nick})")
            return
        # Sinks that do not wait for preroll: the one demuxer thread must never stop at them.
        sink = Gst.ElementFactory.make("fakesink")
        sink.set_property("sync", False)
        sink.set_property("async", False)
        pipeline.add(sink)
        sink.sync_state_with_parent()
        pad.link(sink.get_static_pad("sink"))

    def no_more_pads(_):
        # The frame index saw more audio tracks than parsebin gives now: never expected, but the
        # muxer must not wait for them.
        while waiting:
            waiting.pop(0).give_up("parsebin exposed no pad for it")

    parser.connect("pad-added", pad_added)
    parser.connect("no-more-pads", no_more_pads)
    return tracks
