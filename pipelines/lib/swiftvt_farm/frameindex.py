"""The input's frames as its container has them: one demuxing pass (parsebin, nothing decoded)
lists every video frame's PTS, its stream time (where a seek goes), its running time (the time the
job works in: the encoder's time stamps, the plans' ranges, the output) and its duration, and which
frames are key frames; and what other streams the input holds.

Working from this list rather than from seeks and a nominal frame rate is what makes the chunks
exact: a frame belongs to exactly one chunk (the decoded frames are matched to the list by PTS,
which a demuxer gives the same with or without a seek), a stream that starts at 10 s or at 21 ms
is cut where its frames are, a variable frame rate keeps each frame's own duration, and the report
counts what was written. Running time is the demuxer's segment applied to the PTS: a B-frame edit
list, an empty edit before the video (`ffmpeg -output_ts_offset`), a Matroska video track that
starts after its audio; the other streams, copied into the output from the same demuxer, keep
their place beside the video.
"""
import dataclasses

from .errors import JobError


@dataclasses.dataclass
class Frame:
    pts: int           # ns, as the demuxer gives it (the key to match decoded frames)
    stream_time: int   # ns, the position a seek to this frame asks for
    time: int          # ns, running time: the job's time for this frame
    duration: int      # ns, up to the next frame (the last: its own duration)
    key: bool          # a sync sample: decoding can start here
    seek_position: int = 0  # ns of stream time: where an ACCURATE seek for this frame goes

    # A seek goes a little before the frame (1 ms, or half the gap to the frame before when that
    # is shorter): a decoder clips a frame that overlaps the segment start and gives it the start
    # as its PTS, which then must not be the PTS of the frame sought.
    SEEK_MARGIN = 1_000_000


@dataclasses.dataclass
class FrameIndex:
    frames: list        # [Frame] in presentation order
    streams: list       # [(kind, caps string)] of every elementary stream, the video included
    container: str      # the typefind caps' name (video/quicktime, video/x-matroska, video/x-h264, ...)
    # ns: how far the earliest audio packet lies before running time zero (AAC's priming before an
    # edit list's start), 0 when none does
    audio_lead: int = 0

    @property
    def start(self):
        return self.frames[0].time

    @property
    def end(self):
        return self.frames[-1].time + self.frames[-1].duration

    @property
    def duration(self):
        return self.end - self.start

    def key_frames(self):
        return [i for i, frame in enumerate(self.frames) if frame.key]


# Raw elementary streams carry no container time stamps that survive a seek (GstBaseParse
# estimates positions from the byte rate): they are first wrapped, without re-encoding, into an
# MP4 in the job's folder, by the parser that times their pictures from the stream itself.
RAW_STREAM_WRAPPERS = {"video/x-h264": "h264parse-to-avcc"}


def container_of(Gst, path):
    """The typefind caps' structure name of `path`."""
    pipeline = Gst.parse_launch("filesrc name=src ! typefind name=find ! fakesink")
    pipeline.get_by_name("src").set_property("location", path)
    found = {}
    pipeline.get_by_name("find").connect("have-type", lambda _, __, caps: found.setdefault("caps", caps.copy()))
    try:
        pipeline.set_state(Gst.State.PAUSED)
        pipeline.get_state(30 * Gst.SECOND)
    finally:
        pipeline.set_state(Gst.State.NULL)
    caps = found.get("caps")
    return caps.get_structure(0).get_name() if caps is not None and caps.get_size() else ""


def wrap_raw_stream(Gst, path, container, wrapped_path):
    """A raw H.264 byte stream into an MP4 (the same access units, time stamps from the stream's
    own timing), for the seeks the chunks need. JobError when it cannot be."""
    wrapper = RAW_STREAM_WRAPPERS.get(container)
    if wrapper is None:
        raise JobError(f"{path} is a raw {container} stream, which the farm cannot seek in: "
                       "put it in a container first (ffmpeg -i INPUT -c copy INPUT.mkv, with -r RATE before "
                       "-i when it has no timing)")
    if Gst.ElementFactory.find(wrapper) is None:
        raise JobError(f"{path} is a raw {container} stream and GStreamer has no {wrapper} to wrap "
                       "it (the swiftvt plugin)")
    pipeline = Gst.parse_launch(f"filesrc name=src ! {wrapper} ! mp4mux ! filesink name=out")
    pipeline.get_by_name("src").set_property("location", path)
    pipeline.get_by_name("out").set_property("location", wrapped_path)
    try:
        pipeline.set_state(Gst.State.PLAYING)
        message = pipeline.get_bus().timed_pop_filtered(Gst.CLOCK_TIME_NONE,
                                                        Gst.MessageType.EOS | Gst.MessageType.ERROR)
    finally:
        pipeline.set_state(Gst.State.NULL)
    if message.type == Gst.MessageType.ERROR:
        raise JobError(f"{path}: the raw {container} stream cannot be wrapped for seeking: "
                       f"{message.parse_error()[0].message}"
                       " (when it has no timing, give it one: ffmpeg -r RATE -i INPUT -c copy INPUT.mkv)")


def stream_kind(caps):
    """"video", "audio", "subtitle", or the caps name's first part ("application", ...) of an
    elementary stream parsebin exposes: the index and the mux classify pads alike."""
    name = caps.get_structure(0).get_name() if caps.get_size() else ""
    if name in ("application/x-subtitle", "text/x-raw", "subpicture/x-dvd", "subpicture/x-pgs") or "subtitle" in name:
        return "subtitle"
    return name.split("/")[0] if "/" in name else name


def lowers_start(earlier, later):
    """Whether `later` is `earlier` with its start moved back, and nothing else that places a frame:
    the same timeline, whose first guess was late. matroskademux starts its segment at the first
    block it meets (a video frame at 21 ms), sends a frame or two, and sends the segment again from
    the earliest block (the audio at 0) when it meets it; the frames sent before belong to the
    later segment's timeline, as every stream copied beside them does (the audio never saw the
    first). A segment of another edit (qtdemux) or after a seek has another base."""
    return (later.start < earlier.start and later.base == earlier.base and later.rate == earlier.rate
            and later.applied_rate == earlier.applied_rate and later.stop == earlier.stop
            and later.offset == earlier.offset and later.format == earlier.format)


def build(Gst, path, container):
    """The FrameIndex of `path`'s first video stream. JobError when it cannot be read, has no video,
    or a frame has no time stamp."""
    pipeline = Gst.Pipeline.new("frame-index")
    source = Gst.ElementFactory.make("filesrc")
    source.set_property("location", path)
    parser = Gst.ElementFactory.make("parsebin")
    # Sinks that do not wait for preroll: one demuxer thread feeds every stream (Matroska), and
    # the state change would wait on a sink whose stream the thread cannot reach while another
    # sink holds it in its preroll.
    sink = Gst.ElementFactory.make("appsink")
    sink.set_property("sync", False)
    sink.set_property("async", False)
    sink.set_property("max-buffers", 64)
    for element in (source, parser, sink):
        pipeline.add(element)
    source.link(parser)
    streams = []
    # Where the other streams' data ends (their PTS), to tell a truncated file from one whose video
    # is shorter than its audio.
    data_end = {"ns": 0}

    def note_end(_, info):
        buffer = info.get_buffer()
        if buffer.pts != Gst.CLOCK_TIME_NONE:
            end = buffer.pts + (buffer.duration if buffer.duration != Gst.CLOCK_TIME_NONE else 0)
            data_end["ns"] = max(data_end["ns"], end)
        return Gst.PadProbeReturn.OK

    def pad_added(_, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        kind = stream_kind(caps)
        position = len(streams)
        streams.append((kind, caps.to_string()))

        def on_caps(_, info):
            # parsebin may expose a pad before its parser has seen the stream (its caps then
            # are the parser's template: AC-3 or E-AC-3, any rate); the stream's own caps come
            # with its first CAPS event, and the checks of what OUTPUT can carry need them.
            event = info.get_event()
            if event.type == Gst.EventType.CAPS:
                stream_caps = event.parse_caps()
                streams[position] = (stream_kind(stream_caps), stream_caps.to_string())
            return Gst.PadProbeReturn.OK

        pad.add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, on_caps)
        if kind == "audio":
            watch_audio_lead(pad)
        target = None
        if kind == "video" and not sink.get_static_pad("sink").is_linked():
            target = sink
        else:
            target = Gst.ElementFactory.make("fakesink")
            target.set_property("sync", False)
            target.set_property("async", False)
            pipeline.add(target)
            target.sync_state_with_parent()
            target.get_static_pad("sink").add_probe(Gst.PadProbeType.BUFFER, note_end)
        pad.link(target.get_static_pad("sink"))

    audio_lead = [0]

    def watch_audio_lead(pad):
        # A packet before its segment's start comes first after the segment (priming), so the
        # first buffer after each segment is enough; it is read against the segment current
        # then (matroskademux sends two before its first audio buffer).
        state = {"segment": None}

        def first_buffer(_, info):
            pts = info.get_buffer().pts
            if pts != Gst.CLOCK_TIME_NONE:
                sign, running_time = state["segment"].to_running_time_full(Gst.Format.TIME, pts)
                if sign < 0:
                    audio_lead[0] = max(audio_lead[0], running_time)
            state["segment"] = None
            return Gst.PadProbeReturn.REMOVE

        def on_segment(_, info):
            event = info.get_event()
            if event.type == Gst.EventType.SEGMENT:
                armed = state["segment"] is not None
                state["segment"] = event.parse_segment()
                if not armed:
                    pad.add_probe(Gst.PadProbeType.BUFFER, first_buffer)
            return Gst.PadProbeReturn.OK

        pad.add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, on_segment)

    parser.connect("pad-added", pad_added)
    segment = {"current": None}

    def on_event(_, info):
        event = info.get_event()
        if event.type == Gst.EventType.SEGMENT:
            segment["current"] = event.parse_segment()
        return Gst.PadProbeReturn.OK

    sink.get_static_pad("sink").add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, on_event)
    # The video's segments in the order they came; a frame refers to one by its position.
    timeline = []
    received = []   # (pts, position in timeline, own duration or None, key frame)
    declared = None  # the duration the container declares
    bus = pipeline.get_bus()
    try:
        pipeline.set_state(Gst.State.PLAYING)
        while True:
            sample = sink.try_pull_sample(Gst.SECOND)
            if sample is None:
                message = bus.pop_filtered(Gst.MessageType.ERROR | Gst.MessageType.EOS)
                if message is not None and message.type == Gst.MessageType.ERROR:
                    raise JobError(f"cannot read {path}: {message.parse_error()[0].message}")
                if message is not None or sink.is_eos():
                    break
                continue
            if declared is None:
                known, declared = pipeline.query_duration(Gst.Format.TIME)
                declared = declared if known and declared > 0 else 0
            buffer = sample.get_buffer()
            current = sample.get_segment() or segment["current"]
            if buffer.pts == Gst.CLOCK_TIME_NONE:
                raise JobError(f"{path}: video frame {len(received)} has no time stamp, so the input "
                               "cannot be cut into chunks")
            if not timeline or not current.is_equal(timeline[-1]):
                if timeline and lowers_start(timeline[-1], current):
                    timeline[-1] = current
                else:
                    timeline.append(current)
            own_duration = buffer.duration if buffer.duration != Gst.CLOCK_TIME_NONE else None
            received.append((buffer.pts, len(timeline) - 1, own_duration,
                             not buffer.has_flags(Gst.BufferFlags.DELTA_UNIT)))
    finally:
        pipeline.set_state(Gst.State.NULL)
    if not any(kind == "video" for kind, _ in streams):
        raise JobError(f"{path} has no video stream")
    raw = []
    for pts, position, own_duration, key in received:
        time_stamp = timeline[position].to_running_time(Gst.Format.TIME, pts)
        stream_time = timeline[position].to_stream_time(Gst.Format.TIME, pts)
        if time_stamp == Gst.CLOCK_TIME_NONE or stream_time == Gst.CLOCK_TIME_NONE:
            # Outside the segment: the demuxer sends it for decoding only (before an edit
            # list's start); no output frame comes from it.
            continue
        raw.append((pts, stream_time, time_stamp, own_duration, key))
    if not raw:
        raise JobError(f"{path}: its video stream holds no frames")
    raw.sort(key=lambda frame: frame[2])
    gaps = sorted(b[2] - a[2] for a, b in zip(raw, raw[1:]) if b[2] > a[2])
    typical = gaps[len(gaps) // 2] if gaps else (raw[0][3] or 40_000_000)
    frames = []
    for i, (pts, stream_time, time_stamp, own_duration, key) in enumerate(raw):
        if i + 1 < len(raw):
            duration = raw[i + 1][2] - time_stamp
        else:
            duration = own_duration if own_duration else typical
        if duration <= 0:
            raise JobError(f"{path}: two video frames at {time_stamp / 1e9:.6f} s: the input's time stamps are broken")
        gap_before = stream_time - raw[i - 1][1] if i > 0 else Frame.SEEK_MARGIN * 2
        seek_position = max(0, stream_time - max(1, min(Frame.SEEK_MARGIN, gap_before // 2)))
        frames.append(Frame(pts, stream_time, time_stamp, duration, key, seek_position))
    # A container whose header promises more than its data holds (a download cut short, an MP4
    # whose moov comes first): every stream ends well before the duration it declares. The
    # streams' ends are PTS (stream time where there is no edit list), compared with the
    # declared stream-time duration; a second or 2 % of slack for rounding and audio priming.
    data_ends = max(data_end["ns"], max(f.stream_time + f.duration for f in frames))
    if declared and data_ends < declared - max(Gst.SECOND, declared // 50):
        raise JobError(f"{path} is truncated: its data ends at {data_ends / 1e9:.3f} s ({len(frames)} video frames), "
                       f"its header says {declared / 1e9:.3f} s; to encode what is there, copy "
                       "it into a new file first (ffmpeg -i INPUT -c copy COPY.mp4)")
    if not frames[0].key:
        # The first frame in presentation order is decoded from the first key frame in decode
        # order; the first chunk starts at it whatever its flag says.
        frames[0].key = True
    return FrameIndex(frames, streams, container, audio_lead[0])
