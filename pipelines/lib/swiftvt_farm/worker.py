"""The farm's worker side: the Dask tasks that decode a chunk of INPUT and feed its frames to
`swiftvt-farm encode`.

Everything a task needs is defined in this module, with its imports inside the functions: the job
registers the module with cloudpickle to be pickled by value (Dask then sends these functions
with each task), so a `dask worker` started anywhere (another host, another current directory,
no copy of this repository) runs them. They need GStreamer (decodebin for INPUT's formats) and
swiftvt-farm on the worker host.

Frames are chosen by the input's own time stamps (the container's PTS, listed by the client's
frame index, swiftvt_farm.frameindex): a range is a list of [pts, time, duration] of the frames it
holds, where time is the frame's running time in the input (what the encoder and the output get).
Seeks only bring the decoder near the first of them; a decoded frame whose PTS is not in the list
(one before the range, or one the decoder clipped to the seek position and re-timed) is passed
over, and a frame of the list that never comes is an error naming it.
"""
import os
import shutil
import struct
import subprocess
import tempfile
import time

FRAME_RECORD = 1        # contract: uint8 1, int64 pts_ns, int64 duration_ns, frame bytes
END_OF_RANGE_RECORD = 2  # contract: uint8 2


def _gst():
    """GStreamer for a worker thread, initialised once per process."""
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    gi.require_version("GstVideo", "1.0")
    from gi.repository import Gst, GstApp, GstVideo  # noqa: F401 (GstApp: the AppSink methods)
    if not Gst.is_initialized():
        Gst.init(None)
    return Gst, GstVideo


def _seconds(ns):
    return "end" if ns is None else f"{ns / 1e9:.3f} s"


def _chunk_label(chunk):
    """'chunk 3 (6.000 s – 8.000 s)': how every message names a chunk (the client writes it; the
    first chunk's open start reads 0, the last one's open end the duration)."""
    return chunk["label"]


def _resolve_farm_tool(farm_tool):
    """The swiftvt-farm of this host: the path given, else $SWIFTVT_FARM_TOOL, else PATH. None if
    there is none (the caller says so)."""
    candidate = farm_tool or os.environ.get("SWIFTVT_FARM_TOOL") or "swiftvt-farm"
    if os.sep in candidate:
        return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    return shutil.which(candidate)


def farm_tool_defaults(farm_tool):
    """The encoder's rules the job plans with, from `swiftvt-farm defaults` (the Swift code that
    applies them; the job keeps no copy): {"gop-seconds": 10.0, "minimum-gop-frames": 4.0}."""
    import subprocess
    completed = subprocess.run([farm_tool, "defaults"], capture_output=True, text=True, timeout=60)
    if completed.returncode != 0:
        raise RuntimeError(f"{farm_tool} defaults failed: {completed.stderr.strip()}")
    pairs = (line.split() for line in completed.stdout.splitlines() if line.strip())
    return {name: float(value) for name, value in pairs}


def check_worker_host(farm_tool):
    """Run on every worker before any work (client.run): what this host would use, or the problem."""
    import socket
    resolved = _resolve_farm_tool(farm_tool)
    problem = None
    if resolved is None:
        problem = (f"swiftvt-farm not found on worker host {socket.gethostname()} "
                   "(--farm-tool, SWIFTVT_FARM_TOOL or PATH: "
                   f"{farm_tool or os.environ.get('SWIFTVT_FARM_TOOL') or 'swiftvt-farm'})")
    else:
        try:
            _gst()
        except Exception as error:  # noqa: BLE001 (reported as the host's problem)
            problem = f"GStreamer's Python bindings do not load on worker host {socket.gethostname()}: {error}"
    return {"host": socket.gethostname(), "farm_tool": resolved, "problem": problem}


def _local_input(input_ref, input_key):
    """INPUT as a file on this worker. input_ref is the input's path (--shared-dir) or its bytes (a
    scattered Dask future, resolved by Dask before the task runs). The bytes are written once per
    worker, named by the scatter key, into the worker's local directory (which the worker removes
    when it stops); later tasks on this worker find the file there."""
    if isinstance(input_ref, str):
        return input_ref
    from distributed import get_worker
    path = os.path.join(get_worker().local_directory, f"swiftvt-farm-input-{input_key}")
    if not (os.path.exists(path) and os.path.getsize(path) == len(input_ref)):
        # Written under a private name and renamed, so that another thread of this worker never
        # reads a half-written file (both write the same bytes; the last rename wins).
        fd, partial = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".input-")
        with os.fdopen(fd, "wb") as out:
            out.write(input_ref)
        os.replace(partial, path)
    return path


def _this_worker():
    """The Dask worker running this task, None outside one."""
    try:
        from distributed import get_worker
        return get_worker()
    except (ImportError, ValueError):
        return None


def _running_tasks(worker):
    """{private folder: its encoder (Popen) or None} of the chunks this worker process is
    encoding. Kept on the Worker object: this module is pickled by value with every task, so a
    global of it would be one per task, not one per process."""
    return worker.__dict__.setdefault("_swiftvt_farm_tasks", {}) if worker is not None else {}


class StopTasksAtClose:
    """A Dask worker plugin (client.register_worker_plugin). A worker that closes with chunks still
    encoding (the client stopped with Ctrl-C and its LocalCluster closes) removes its local
    directory while their encoders write in it: Dask then logs every file that vanished under it,
    and a file written after it passed stays. Before that (teardown comes first), the encoders are
    stopped and the tasks' own cleanup is waited for (a few seconds at most)."""

    name = "swiftvt-farm-stop-tasks-at-close"

    def setup(self, worker):
        pass

    def teardown(self, worker):
        tasks = _running_tasks(worker)
        for encoder in list(tasks.values()):
            if encoder is not None:
                encoder.kill()
        deadline = time.monotonic() + 10
        while tasks and time.monotonic() < deadline:
            time.sleep(0.05)


def _die_with_parent():
    """preexec_fn for the encoder: the kernel sends it SIGKILL when the thread that started it
    ends, which is the worker's task thread, alive until the encoder exits, unless the worker
    process dies (kill -9 included). Without it, a killed worker would leave an orphan encoder
    running on its frames. Loaded before fork: the child calls only the resolved prctl."""
    import ctypes
    import signal
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    parent = os.getpid()
    PR_SET_PDEATHSIG = 1

    def set_death_signal():
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the worker died between fork and prctl
            os._exit(1)
    return set_death_signal


def _read_dir(path):
    """{file name: bytes} of a chunk directory. Its files are hidden (names begin with '.'): every
    regular file is taken, not a glob."""
    files = {}
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False):
                with open(entry.path, "rb") as f:
                    files[entry.name] = f.read()
    return files


def _write_dir(path, files):
    os.makedirs(path, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


def _one_decoder_thread(bin, sub_bin, element):
    """decodebin's deep-element-added: decoders with a thread count (avdec_*: max-threads) get one
    thread. A worker is one core's worth of work, its encoder runs with one thread; a decoder
    spreading over every core of the host would compete with the other workers' encoders."""
    if element.find_property("max-threads") is not None:
        element.set_property("max-threads", 1)


class _EncoderStopped(Exception):
    """The encoder closed its end of the frame pipe: its stderr says why."""


def _write_all(descriptor, data):
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def _field_order(info, caps, buffer):
    """The frame stream's field_order for the negotiated `caps` (`info`, their VideoInfo) and the
    first frame `buffer`: 0 progressive, 1 interlaced top field first, 2 bottom field first.
    Interleaved or mixed is interlaced, in the caps' field-order, as vtenc reads caps; caps without
    one leave the order to the buffers' TFF flag (GstVideo's GST_VIDEO_FIELD_ORDER_UNKNOWN), read
    from the first frame because the encoder takes one order for the whole chunk."""
    from gi.repository import GstVideo
    if info.interlace_mode not in (GstVideo.VideoInterlaceMode.INTERLEAVED, GstVideo.VideoInterlaceMode.MIXED):
        return 0
    named = caps.get_structure(0).get_string("field-order")
    order = GstVideo.VideoFieldOrder.from_string(named) if named else GstVideo.VideoFieldOrder.UNKNOWN
    if order == GstVideo.VideoFieldOrder.UNKNOWN:
        top_first = (int(buffer.get_flags()) & int(GstVideo.VideoBufferFlags.TFF)) != 0
    else:
        top_first = order == GstVideo.VideoFieldOrder.TOP_FIELD_FIRST
    return 1 if top_first else 2


def _feed_frames(Gst, GstVideo, input_path, chunk, ranges, descriptor):
    """Decodes the frames of each range of `ranges` ({"frames": [[pts, time, duration], ...],
    "seek_start", "seek_stop": stream time ns or None}) of INPUT and writes the contract's FRAME
    STREAM to the encoder's pipe `descriptor`: the header before the first frame, each frame of the
    range (with its time and duration from the index), an end-of-range record after each range.
    Returns the frames of each range. Raises RuntimeError naming the chunk on a GStreamer error or
    a frame that does not decode, _EncoderStopped when the encoder stops reading.

    The pictures go from the decoder's buffers into the pipe by fdsink, in GStreamer's streaming
    thread: the pipe's copy is the one the process boundary needs, and Python never holds a frame
    (an appsink would make it copy each one into a bytes object first). A pad probe on fdsink's
    input writes each frame's record header just before fdsink writes its picture, in the same
    thread, and leaves out the frames that are not in the range."""
    import fcntl
    try:
        # 1 MiB (the unprivileged maximum) instead of 64 KiB: a 720p picture crosses in 2 writes
        # rather than 22, each a wake-up of the encoder and of this thread.
        fcntl.fcntl(descriptor, fcntl.F_SETPIPE_SZ, 1 << 20)
    except (OSError, AttributeError):
        pass
    pipeline = Gst.parse_launch(
        'filesrc name=src ! decodebin name=decoder caps="video/x-raw(ANY)" expose-all-streams=false '
        "! videoconvert ! video/x-raw,format=I420 ! fdsink name=sink sync=false")
    pipeline.get_by_name("src").set_property("location", input_path)
    pipeline.get_by_name("decoder").connect("deep-element-added", _one_decoder_thread)
    sink = pipeline.get_by_name("sink")
    sink.set_property("fd", descriptor)
    bus = pipeline.get_bus()
    label = _chunk_label(chunk)
    # Shared with the probe (GStreamer's streaming thread). `wanted` is None until the first seek
    # (the preroll buffer passes: fdsink holds it unwritten and the seek flushes it), then the
    # range's frames not yet written ({pts: (time, duration)}); every other buffer is dropped, also
    # those the decoder still sends after the range is complete (an empty dict, never None again:
    # a buffer let through then would reach the pipe without its record header).
    state = {"wanted": None, "header": None, "frames": 0, "last_frame": time.monotonic(), "failure": None,
             "encoder_stopped": False}

    def on_buffer(pad, probe_info):
        if state["failure"] or state["encoder_stopped"]:
            return Gst.PadProbeReturn.DROP
        wanted = state["wanted"]
        if wanted is None:
            # The buffer that prerolls the pipeline before a seek: fdsink holds it and the seek
            # flushes it unwritten. Dropping it instead would let the decoder run on to the end of
            # the file looking for a buffer to preroll with.
            return Gst.PadProbeReturn.OK
        buffer = probe_info.get_buffer()
        timing = wanted.pop(buffer.pts, None)
        if timing is None:
            # Before the range, after it (the decoder ran on), or a frame the decoder clipped to
            # the seek position and re-timed: not one of the range's frames as the index has them.
            return Gst.PadProbeReturn.DROP
        try:
            if state["header"] is None:
                caps = pad.get_current_caps()
                info = GstVideo.VideoInfo.new_from_caps(caps)
                state["header"] = info
                _write_all(descriptor, b"SVTFRAME" + struct.pack(
                    "<14I", 2, info.width, info.height, info.fps_n, info.fps_d, 0,
                    info.stride[0], info.stride[1], info.stride[2],
                    info.offset[0], info.offset[1], info.offset[2], info.size,
                    _field_order(info, caps, buffer)))
            # fdsink writes the whole buffer: a size other than the caps' would shift every record after it.
            if buffer.get_size() != state["header"].size:
                state["failure"] = (f"a decoded frame holds {buffer.get_size()} bytes, its caps say "
                                    f"{state['header'].size}")
                return Gst.PadProbeReturn.DROP
            _write_all(descriptor, struct.pack("<Bqq", FRAME_RECORD, timing[0], timing[1]))
        except BrokenPipeError:
            state["encoder_stopped"] = True
            return Gst.PadProbeReturn.DROP
        state["frames"] += 1
        state["last_frame"] = time.monotonic()
        return Gst.PadProbeReturn.OK

    sink_pad = sink.get_static_pad("sink")
    sink_pad.add_probe(Gst.PadProbeType.BUFFER, on_buffer)

    def fail(what, message=None):
        message = message or bus.pop_filtered(Gst.MessageType.ERROR)
        if message is not None:
            error, debug = message.parse_error()
            what = f"{what}: {error.message}" + (f" ({debug.splitlines()[0]})" if debug else "")
        raise RuntimeError(f"{label}: {what}")

    def check_probe():
        if state["encoder_stopped"]:
            raise _EncoderStopped()
        if state["failure"]:
            fail(state["failure"])

    def settle(what):
        status, _, _ = pipeline.get_state(60 * Gst.SECOND)
        check_probe()
        if status == Gst.StateChangeReturn.FAILURE:
            fail(what)
        if status == Gst.StateChangeReturn.ASYNC:
            fail(f"{what}: no answer in 60 s")

    counts = []
    try:
        pipeline.set_state(Gst.State.PAUSED)
        settle("the input does not decode")
        for frame_range in ranges:
            frames = frame_range["frames"]
            if not frames:
                raise RuntimeError(f"{label}: a range without frames")
            start, stop = frame_range["seek_start"], frame_range["seek_stop"]
            state.update(wanted={pts: (at, duration) for pts, at, duration in frames}, frames=0,
                         last_frame=time.monotonic())
            flags = Gst.SeekFlags.FLUSH | Gst.SeekFlags.ACCURATE
            if not pipeline.seek(1.0, Gst.Format.TIME, flags, Gst.SeekType.SET, start,
                                 Gst.SeekType.NONE if stop is None else Gst.SeekType.SET,
                                 -1 if stop is None else stop):
                fail(f"the input cannot seek to {_seconds(start)}")
            settle(f"seeking to {_seconds(start)} failed")
            pipeline.set_state(Gst.State.PLAYING)
            # Until EOS (the seek stops at the frame after the range, or the input ends), never on
            # the range's last frame: the probe runs before fdsink writes that picture, and the
            # end-of-range record written from here could land in the middle of it. EOS reaches the
            # bus after fdsink has written everything before it.
            while True:
                message = bus.timed_pop_filtered(Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
                check_probe()
                if message is not None and message.type == Gst.MessageType.ERROR:
                    if message.src == sink:  # fdsink could not write: the encoder is gone
                        raise _EncoderStopped()
                    fail("decoding failed", message)
                if message is not None:
                    break
                if time.monotonic() - state["last_frame"] >= 120:
                    fail("decoding stalled (no frame for 120 s)")
            missing = sorted(state["wanted"].values())
            state["wanted"] = {}
            check_probe()
            if missing:
                first = missing[0][0]
                raise RuntimeError(f"{label}: {len(missing)} of its {len(frames)} frames did not decode, "
                                   f"the first at {first / 1e9:.3f} s: the input is damaged there")
            counts.append(state["frames"])
            try:
                _write_all(descriptor, bytes([END_OF_RANGE_RECORD]))
            except BrokenPipeError:
                raise _EncoderStopped() from None
            pipeline.set_state(Gst.State.PAUSED)
            settle("pausing after the range failed")
    finally:
        state["wanted"] = {}
        pipeline.set_state(Gst.State.NULL)
    return counts


def _frame_range(chunk, start, stop):
    """The frames of `chunk` whose time lies in [start, stop) (None: open), for _feed_frames: their
    [pts, time, duration], where to seek (the first one's seek position, a little before it: see
    frameindex.Frame) and where to stop (the stream time of the first frame after the range; open
    at the end of the input)."""
    frames = chunk["frames"]  # [[pts, stream_time, time, duration, seek_position]] in presentation order
    chosen = [i for i, frame in enumerate(frames)
              if (start is None or frame[2] >= start) and (stop is None or frame[2] < stop)]
    if not chosen:
        raise RuntimeError(f"{_chunk_label(chunk)}: no frames between {_seconds(start)} and {_seconds(stop)}")
    first, last = chosen[0], chosen[-1]
    after = frames[last + 1][1] if last + 1 < len(frames) else chunk["stream_time_after"]
    return {"frames": [[frames[i][0], frames[i][2], frames[i][3]] for i in chosen],
            "seek_start": frames[first][4], "seek_stop": after}


def encode_chunk(chunk, input_ref, input_key, settings, previous=None):
    """One Dask task: pass 1 of a chunk (previous None) or a later pass (previous = {"files":
    {name: bytes} or None, "path": a directory in --shared-dir or None: the chunk after the pass
    before; "plan": {"file": bytes, "ranges": [[start, stop], ...]}}, scattered by the client).
    Returns {"files": {name: bytes} or None, "shared_path": path or None, "frames", "bits",
    "worker", "pid", "started", "finished"}."""
    import socket
    started = time.time()
    Gst, GstVideo = _gst()
    farm_tool = _resolve_farm_tool(settings["farm_tool"])
    label = _chunk_label(chunk)
    if farm_tool is None:
        raise RuntimeError(f"{label}: swiftvt-farm not found on worker host {socket.gethostname()}")
    input_path = _local_input(input_ref, input_key)
    this_worker = _this_worker()
    worker = this_worker.address if this_worker is not None else socket.gethostname()

    # A private directory for the chunk: a rerun after a killed worker starts from the inputs
    # again, never from a half-updated directory. In the worker's local directory: when the
    # worker is killed, the next worker started on its workspace removes it with the rest of
    # the dead worker's folder (Dask's own lock files tell it the owner is gone).
    private = tempfile.mkdtemp(dir=this_worker.local_directory if this_worker is not None else None,
                               prefix=f"swiftvt-farm-chunk{chunk['index']}-")
    running = _running_tasks(this_worker)
    running[private] = None
    try:
        chunk_dir = os.path.join(private, "chunk")
        command = [farm_tool, "encode", chunk_dir, "--bitrate", str(settings["bits_per_second"]),
                   "--threads", str(settings["encoder_threads"]), "--codec", settings.get("codec", "h264")]
        if previous is None:
            ranges = [_frame_range(chunk, None, None)]
        else:
            plan = previous["plan"]
            if previous["path"] is not None:
                shutil.copytree(previous["path"], chunk_dir)
            else:
                _write_dir(chunk_dir, previous["files"])
            plan_path = os.path.join(private, "chunk.plan")
            with open(plan_path, "wb") as f:
                f.write(plan["file"])
            command += ["--plan", plan_path]
            ranges = [_frame_range(chunk, start, stop) for start, stop in plan["ranges"]]
        # The encoder's output goes to files: with pipes, an encoder writing much to stderr while
        # we write frames to its stdin could block both.
        with open(os.path.join(private, "stdout"), "wb+") as out, open(os.path.join(private, "stderr"), "wb+") as err:
            encoder = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                       preexec_fn=_die_with_parent())
            running[private] = encoder
            try:
                counts = _feed_frames(Gst, GstVideo, input_path, chunk, ranges, encoder.stdin.fileno())
                encoder.stdin.close()
            except (_EncoderStopped, BrokenPipeError):
                counts = None  # the encoder stopped reading: its stderr says why (below)
            except BaseException:
                encoder.kill()
                encoder.wait()
                raise
            status = encoder.wait()
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        if status != 0 or counts is None:
            lines = [line for line in stderr.splitlines() if line.strip()]
            reason = next((line for line in lines if line.startswith("swiftvt-farm: ")), lines[-1] if lines else "")
            raise RuntimeError(f"{label}: swiftvt-farm encode failed (exit {status}): {reason or 'no message'}")
        result_line = next((line for line in stdout.splitlines() if line.startswith("result ")), None)
        if result_line is None:
            raise RuntimeError(f"{label}: swiftvt-farm encode printed no result line: {stdout.strip()!r}")
        fields = dict(item.split("=", 1) for item in result_line.split()[1:])
        if int(fields["frames"]) != sum(counts):
            raise RuntimeError(f"{label}: swiftvt-farm encode says it encoded {fields['frames']} frames, "
                               f"it was given {sum(counts)}")
        result = {"frames": int(fields["frames"]), "bits": int(fields["bits"]), "fed": sum(counts),
                  "first_picture_bits": int(fields.get("first_picture_bits", 0)),
                  "worker": worker, "host": socket.gethostname(), "pid": os.getpid(), "started": started}
        if settings["shared_dir"]:
            # Copied under a temporary name and renamed: a rerun of this task, or a reader on another
            # host, never sees a partial directory.
            target = os.path.join(settings["shared_dir"], f"chunk-{chunk['index']:04d}-pass-{settings['pass']}")
            partial = tempfile.mkdtemp(dir=settings["shared_dir"], prefix=f".partial-chunk-{chunk['index']}-")
            shutil.rmtree(partial)
            shutil.copytree(chunk_dir, partial)
            shutil.rmtree(target, ignore_errors=True)
            os.rename(partial, target)
            result.update(files=None, shared_path=target)
        else:
            result.update(files=_read_dir(chunk_dir), shared_path=None)
        result["finished"] = time.time()
        return result
    finally:
        shutil.rmtree(private, ignore_errors=True)
        running.pop(private, None)
