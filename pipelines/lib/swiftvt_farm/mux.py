"""The splice file (docs/farm.md) into OUTPUT."""
import os
import struct
import tempfile

from .errors import JobError


def mux(Gst, splice_path, output, probe_info, expected_frames):
    """The splice file (contract) into OUTPUT through appsrc ! mp4mux, written as a hidden temporary
    file beside OUTPUT and renamed to it once mp4mux reached EOS. Returns what was written: frames,
    payload bytes and seconds (from the first frame's presentation time to the end of the last
    one's, the time stamps written: a variable frame rate is counted as it is)."""
    with open(splice_path, "rb") as splice:
        magic = splice.read(8)
        if magic != b"SVTSPLIC":
            raise JobError(f"swiftvt-farm splice wrote no splice file ({magic!r})")
        version, width, height, codec_data_size = struct.unpack("<4I", splice.read(16))
        codec_data = splice.read(codec_data_size)
        segment_start, = struct.unpack("<q", splice.read(8))
        caps_text = (f"video/x-h264,stream-format=avc,alignment=au,width={width},height={height},"
                     f"framerate={probe_info['fps_n']}/{probe_info['fps_d']},codec_data=(buffer){codec_data.hex()}")
        caps = Gst.Caps.from_string(caps_text)
        directory = os.path.dirname(os.path.abspath(output))
        fd, partial = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(output)}.", suffix=".part")
        os.close(fd)
        try:
            # mp4mux's video pad named explicitly: linked by parse_launch before caps are known,
            # appsrc would get an audio request pad and fail to negotiate. codec_data goes in the
            # caps string (Gst.Caps.set_value cannot set a GstBuffer from PyGObject).
            pipeline = Gst.parse_launch(
                f'appsrc name=src format=time block=true max-bytes=8000000 caps="{caps_text}" '
                f"! mux.video_0 mp4mux name=mux ! filesink name=out")
            pipeline.get_by_name("out").set_property("location", partial)
            source = pipeline.get_by_name("src")
            bus = pipeline.get_bus()
            pipeline.set_state(Gst.State.PLAYING)
            frames = payload = 0
            first_pts, end = None, None
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
                    # The first buffer carries the segment: the first PTS runs at 0 and mp4mux writes
                    # an edit list for the B-frame delay (DTS before the first PTS).
                    segment = Gst.Segment()
                    segment.init(Gst.Format.TIME)
                    segment.start = segment.position = segment_start
                    flow = source.emit("push-sample", Gst.Sample.new(buffer, caps, segment, None))
                else:
                    flow = source.emit("push-buffer", buffer)
                if flow != Gst.FlowReturn.OK:
                    message = bus.pop_filtered(Gst.MessageType.ERROR)
                    raise JobError(f"mp4mux refused frame {frames}: "
                                   f"{message.parse_error()[0].message if message else flow.value_nick}")
                frames += 1
                payload += size
                first_pts = pts if first_pts is None else min(first_pts, pts)
                end = max(end or 0, pts + max(duration, 0))
            source.emit("end-of-stream")
            message = bus.timed_pop_filtered(300 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
            pipeline.set_state(Gst.State.NULL)
            if message is None or message.type != Gst.MessageType.EOS:
                raise JobError("mp4mux did not finish: "
                               + (message.parse_error()[0].message if message else "no EOS in 300 s"))
            if frames != expected_frames:
                raise JobError(f"the spliced stream holds {frames} frames, the input {expected_frames}")
            # mkstemp made the file private (0600); OUTPUT gets the mode any new file gets here.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(partial, 0o666 & ~umask)
            os.replace(partial, output)
            partial = None
        finally:
            if partial is not None:
                os.unlink(partial)
    return {"frames": frames, "payload": payload,
            "seconds": (end - first_pts) / 1e9 if frames else 0.0}
