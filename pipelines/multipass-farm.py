#!/usr/bin/env python3
"""Multi-pass H.264 encoding of one file across machines: chunks encoded on Dask workers, SwiftVT's
multi-pass rate control deciding for the whole file (issue 22).

    /usr/bin/python3 pipelines/multipass-farm.py INPUT OUTPUT.mp4 --bitrate KBITS
        [--scheduler ADDRESS] [--workers N] [--threads-per-worker 1] [--max-passes 3]
        [--chunk-seconds S] [--shared-dir DIR] [--farm-tool PATH] [--timings FILE.json]

1. The client probes INPUT (GstPbutils.Discoverer) and cuts it into chunks whose boundaries are key
   frames of the source (a KEY_UNIT|SNAP_BEFORE seek in a paused decoding pipeline; the preroll
   sample's stream time), so that each chunk's decode starts at a key frame.
2. Pass 1: one Dask task per chunk decodes its time range (an ACCURATE seek) and feeds the frames to
   `swiftvt-farm encode`, which records the analysis (MultiPassStorage) and the compressed frames
   (FrameSilo) in a chunk directory that the task returns as {file name: bytes}.
3. `swiftvt-farm plan` (SwiftVT's own multi-pass rate control) reads every chunk's analysis and says
   which ranges of which chunks to re-encode; 4. the client submits those as tasks, and again after
   each pass until the planner says "finished" (or "taken-back": the last pass is undone).
5. `swiftvt-farm splice` joins the chunks into one stream (distinct idr_pic_id where chunks meet, one
   set of parameter sets, continuous time stamps) and the client muxes it with `appsrc ! mp4mux`
   into a temporary file beside OUTPUT, renamed to OUTPUT when complete.

Dask does all scheduling and moving of data: the input is scattered to the workers once
(broadcast), chunk directories travel as task results and arguments. With --shared-dir, the input
and the chunk directories live in a folder every host sees and only paths travel.
The byte contract between this job and swiftvt-farm is described in the README (section "The farm").

Worker tasks are plain functions of this file: run as __main__, cloudpickle pickles them by value,
so a `dask worker` started anywhere (another host, another current directory) runs them without
this file. They import gi themselves and need GStreamer (decodebin for INPUT's formats) and
swiftvt-farm on the worker host.
"""
import argparse
import json
import logging
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

# ---------------------------------------------------------------------------------------------
# Worker side. Everything a task needs is defined in these functions (imports inside them), so that
# they run in a worker process that never imported this file.
# ---------------------------------------------------------------------------------------------

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


def check_worker_host(farm_tool):
    """Run on every worker before any work (client.run): what this host would use, or the problem."""
    import socket
    resolved = _resolve_farm_tool(farm_tool)
    problem = None
    if resolved is None:
        problem = (f"swiftvt-farm not found on worker host {socket.gethostname()} "
                   f"(--farm-tool, SWIFTVT_FARM_TOOL or PATH: {farm_tool or os.environ.get('SWIFTVT_FARM_TOOL') or 'swiftvt-farm'})")
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
    """Decodes each [start, stop) of `ranges` (stream time ns; None = open end) of INPUT and writes
    the contract's FRAME STREAM to the encoder's pipe `descriptor`: the header before the first
    frame, each frame whose stream time lies in the range, an end-of-range record after each range.
    Returns the frames of each range. Raises RuntimeError naming the chunk on a GStreamer error or
    an empty range, _EncoderStopped when the encoder stops reading.

    The pictures go from the decoder's buffers into the pipe by fdsink, in GStreamer's streaming
    thread: the pipe's copy is the one the process boundary needs, and Python never holds a frame
    (an appsink would make it copy each one into a bytes object first). A pad probe on fdsink's
    input writes each frame's record header just before fdsink writes its picture, in the same
    thread, and leaves out the frames outside the range."""
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
    # Shared with the probe (GStreamer's streaming thread); the probe counts and writes only while
    # `range` is set, between a seek and the end of its range.
    state = {"range": None, "header": None, "frames": 0, "last_frame": time.monotonic(), "failure": None,
             "encoder_stopped": False, "segment": None}

    def on_buffer(pad, probe_info):
        if state["failure"] or state["encoder_stopped"]:
            return Gst.PadProbeReturn.DROP
        if state["range"] is None:
            # The buffer that prerolls the pipeline before a seek: fdsink holds it and the seek
            # flushes it unwritten. Dropping it instead would let the decoder run on to the end of
            # the file looking for a buffer to preroll with.
            return Gst.PadProbeReturn.OK
        buffer = probe_info.get_buffer()
        start, stop = state["range"]
        if buffer.pts == Gst.CLOCK_TIME_NONE:
            state["failure"] = "a decoded frame has no time stamp"
            return Gst.PadProbeReturn.DROP
        if state["segment"] is None:
            state["failure"] = "a decoded frame came before its segment"
            return Gst.PadProbeReturn.DROP
        pts = state["segment"].to_stream_time(Gst.Format.TIME, buffer.pts)
        # The seek already clips to the range; this keeps a frame that overlaps a boundary by a
        # rounding of its duration out of the chunk that does not own its start.
        if (start is not None and pts < start) or (stop is not None and pts >= stop):
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
                state["failure"] = f"a decoded frame holds {buffer.get_size()} bytes, its caps say {state['header'].size}"
                return Gst.PadProbeReturn.DROP
            duration = buffer.duration if buffer.duration != Gst.CLOCK_TIME_NONE else -1
            _write_all(descriptor, struct.pack("<Bqq", FRAME_RECORD, pts, duration))
        except BrokenPipeError:
            state["encoder_stopped"] = True
            return Gst.PadProbeReturn.DROP
        state["frames"] += 1
        state["last_frame"] = time.monotonic()
        return Gst.PadProbeReturn.OK

    def on_segment(pad, probe_info):
        event = probe_info.get_event()
        if event.type == Gst.EventType.SEGMENT:
            state["segment"] = event.parse_segment()
        return Gst.PadProbeReturn.OK

    sink_pad = sink.get_static_pad("sink")
    sink_pad.add_probe(Gst.PadProbeType.BUFFER, on_buffer)
    sink_pad.add_probe(Gst.PadProbeType.EVENT_DOWNSTREAM, on_segment)

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
        for start, stop in ranges:
            state.update(range=(start, stop), frames=0, last_frame=time.monotonic())
            flags = Gst.SeekFlags.FLUSH | Gst.SeekFlags.ACCURATE
            if not pipeline.seek(1.0, Gst.Format.TIME, flags,
                                 Gst.SeekType.SET, start or 0,
                                 Gst.SeekType.NONE if stop is None else Gst.SeekType.SET,
                                 -1 if stop is None else stop):
                fail(f"the input cannot seek to {_seconds(start or 0)}")
            settle(f"seeking to {_seconds(start or 0)} failed")
            pipeline.set_state(Gst.State.PLAYING)
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
            state["range"] = None
            check_probe()
            frames = state["frames"]
            if frames == 0:
                raise RuntimeError(f"no frames in {label}: the input delivered none in its time range"
                                   + ("" if (start, stop) == (chunk["start"], chunk["stop"])
                                      else f" {_seconds(start)} – {_seconds(stop)}"))
            counts.append(frames)
            try:
                _write_all(descriptor, bytes([END_OF_RANGE_RECORD]))
            except BrokenPipeError:
                raise _EncoderStopped() from None
            pipeline.set_state(Gst.State.PAUSED)
            settle("pausing after the range failed")
    finally:
        state["range"] = None
        pipeline.set_state(Gst.State.NULL)
    return counts


def encode_chunk(chunk, input_ref, input_key, settings, chunk_files=None, plan=None):
    """One Dask task: pass 1 of a chunk (plan None) or a later pass (plan = {"file": bytes,
    "ranges": [[start, stop], ...]} and chunk_files = the chunk directory after the pass before).
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
    try:
        from distributed import get_worker
        worker = get_worker().address
    except (ImportError, ValueError):
        worker = socket.gethostname()

    # A private directory for the chunk: a rerun after a killed worker starts from the inputs
    # again, never from a half-updated directory.
    private = tempfile.mkdtemp(prefix=f"swiftvt-farm-chunk{chunk['index']}-")
    try:
        chunk_dir = os.path.join(private, "chunk")
        command = [farm_tool, "encode", chunk_dir, "--bitrate", str(settings["bits_per_second"]),
                   "--threads", str(settings["encoder_threads"])]
        if plan is None:
            ranges = [(chunk["start"], chunk["stop"])]
        else:
            if settings["shared_dir"]:
                chunk_files = _read_dir(chunk_files)  # the path of the pass before's directory
            _write_dir(chunk_dir, chunk_files)
            plan_path = os.path.join(private, "chunk.plan")
            with open(plan_path, "wb") as f:
                f.write(plan["file"])
            command += ["--plan", plan_path]
            ranges = [(start, stop) for start, stop in plan["ranges"]]
        # The encoder's output goes to files: with pipes, an encoder writing much to stderr while
        # we write frames to its stdin could block both.
        with open(os.path.join(private, "stdout"), "wb+") as out, open(os.path.join(private, "stderr"), "wb+") as err:
            encoder = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                       preexec_fn=_die_with_parent())
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


# ---------------------------------------------------------------------------------------------
# Client side.
# ---------------------------------------------------------------------------------------------

class JobError(Exception):
    """One clear line for the user; the job exits 1."""


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="multipass-farm.py",
        description="Multi-pass H.264 encoding of INPUT into OUTPUT.mp4, chunks encoded on Dask workers, "
                    "SwiftVT's multi-pass rate control planning for the whole file.")
    parser.add_argument("input", metavar="INPUT", help="any file decodebin reads (its first video stream)")
    parser.add_argument("output", metavar="OUTPUT.mp4")
    parser.add_argument("--bitrate", type=float, required=True, metavar="KBITS",
                        help="target average bit rate of the whole file, kbit/s")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="a running Dask scheduler (tcp://HOST:8786); default: a LocalCluster on this machine")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="LocalCluster worker processes (default: the CPU count); with --scheduler: "
                             "wait until N workers are connected (default 1)")
    parser.add_argument("--threads-per-worker", type=int, default=1, metavar="T",
                        help="Dask threads per LocalCluster worker, each running one chunk at a time (default 1)")
    parser.add_argument("--max-passes", type=int, default=3, metavar="N", help="passes at most, the first included (default 3)")
    parser.add_argument("--chunk-seconds", type=float, metavar="S",
                        help="chunk length before snapping to key frames or scene cuts (default: duration / (4 x workers), but no more chunks than 10-s GOPs: see default_chunk_seconds)")
    parser.add_argument("--shared-dir", metavar="DIR",
                        help="a folder every worker host sees at the same path: the input and the chunk "
                             "directories go there and only paths move through Dask")
    parser.add_argument("--farm-tool", metavar="PATH",
                        help="swiftvt-farm on every host (default: $SWIFTVT_FARM_TOOL, else swiftvt-farm on PATH)")
    parser.add_argument("--timings", metavar="FILE.json", help="write per-pass, per-chunk timings here")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the client's work folder (chunk directories, plans, splice file) and print its path")
    args = parser.parse_args(argv)
    if args.bitrate <= 0:
        parser.error("--bitrate must be positive")
    if args.max_passes < 1:
        parser.error("--max-passes must be at least 1")
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.threads_per_worker < 1:
        parser.error("--threads-per-worker must be at least 1")
    if args.chunk_seconds is not None and args.chunk_seconds <= 0:
        parser.error("--chunk-seconds must be positive")
    return args


def init_gstreamer():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    from plugin_env import use_swiftvt_plugin
    use_swiftvt_plugin()  # SWIFTVT_PLUGIN, as the other pipelines; inherited by LocalCluster workers
    import gi
    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    gi.require_version("GstPbutils", "1.0")
    from gi.repository import Gst, GstApp, GstPbutils  # noqa: F401
    Gst.init(None)
    return Gst, GstPbutils


def probe(Gst, GstPbutils, path):
    """Duration (ns), width, height, frame rate of INPUT's first video stream."""
    discoverer = GstPbutils.Discoverer.new(30 * Gst.SECOND)
    try:
        info = discoverer.discover_uri(Gst.filename_to_uri(os.path.abspath(path)))
    except Exception as error:  # GLib.Error: the file is not a format GStreamer reads
        raise JobError(f"cannot read {path}: {getattr(error, 'message', error)}") from None
    videos = info.get_video_streams()
    if not videos:
        raise JobError(f"{path} has no video stream")
    video = videos[0]
    duration = info.get_duration()
    if duration in (0, Gst.CLOCK_TIME_NONE):
        raise JobError(f"{path}: its duration is unknown, so it cannot be cut into chunks")
    return {"duration": duration, "width": video.get_width(), "height": video.get_height(),
            "fps_n": video.get_framerate_num(), "fps_d": video.get_framerate_denom() or 1}


def key_frame_boundaries(Gst, path, duration, chunk_ns):
    """Chunk starts (stream time ns): 0, then for each multiple of chunk_ns the key frame at or
    before it (a KEY_UNIT|SNAP_BEFORE seek in a paused pipeline and the preroll sample's stream
    time). A candidate past the decodable data (no preroll) stays where it is: the ACCURATE seek of
    its chunk still works, and a chunk without frames is reported by its task."""
    pipeline = Gst.parse_launch(
        'filesrc name=src ! decodebin caps="video/x-raw(ANY)" expose-all-streams=false '
        "! videoconvert ! appsink name=sink sync=false")
    pipeline.get_by_name("src").set_property("location", path)
    sink = pipeline.get_by_name("sink")
    starts = [0]
    try:
        pipeline.set_state(Gst.State.PAUSED)
        status, _, _ = pipeline.get_state(30 * Gst.SECOND)
        if status != Gst.StateChangeReturn.SUCCESS:
            message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
            detail = message.parse_error()[0].message if message else "no answer in 30 s"
            raise JobError(f"cannot decode {path}: {detail}")
        candidate = chunk_ns
        # Not within half a chunk of the end: duration / count * count can round to just below
        # the duration and leave a last chunk of a few frames.
        while candidate < duration - chunk_ns // 2:
            key_frame = None
            if pipeline.seek_simple(Gst.Format.TIME, Gst.SeekFlags.FLUSH | Gst.SeekFlags.KEY_UNIT
                                    | Gst.SeekFlags.SNAP_BEFORE, candidate):
                pipeline.get_state(30 * Gst.SECOND)
                sample = sink.try_pull_preroll(5 * Gst.SECOND)
                if sample is not None and sample.get_buffer().pts != Gst.CLOCK_TIME_NONE:
                    key_frame = sample.get_segment().to_stream_time(Gst.Format.TIME, sample.get_buffer().pts)
            start = key_frame if key_frame is not None and key_frame >= 0 else candidate
            if start > starts[-1]:
                starts.append(start)
            candidate += chunk_ns
    finally:
        pipeline.set_state(Gst.State.NULL)
    return starts


# A chunk boundary is an IDR picture the one-host encode may not have: vtmultipasssink puts its IDR
# pictures every 10 s and at scene cuts (x264's scenecut). A boundary moved onto a scene cut costs
# nothing, since the encoder starts a GOP there anyway. Searched within this fraction of a chunk on
# each side of a boundary; a cut is a frame whose 16-bin luma histogram (of a 64x36 picture) lies
# at least SCENE_CUT_DISTANCE (L1, 0...2) from the frame before's (moving pictures stay below 0.11 in the
# test clips; smpte bars to a zone plate is 0.48).
SCENE_CUT_SEARCH = 0.4
SCENE_CUT_DISTANCE = 0.3


def _luma_histogram(sample):
    """The normalised 16-bin histogram of a 64x36 GRAY8 picture (2,304 bytes, stride 64)."""
    data = sample.get_buffer().extract_dup(0, 64 * 36)
    bins = [0] * 16
    for value in data:
        bins[value >> 4] += 1
    return [count / len(data) for count in bins]


def _distance(a, b):
    return sum(abs(x - y) for x, y in zip(a, b))


def scene_cut_boundaries(Gst, path, starts, duration, chunk_ns):
    """Moves each chunk boundary (not the first) onto a scene cut within SCENE_CUT_SEARCH of a chunk
    of it, where there is one. Cheap on long inputs: first the source's key frames in the window
    (KEY_UNIT seeks, one picture decoded each) show between which two the picture changes most;
    then only the frames between those two are decoded (an ACCURATE seek) to find the frame. A
    boundary without a cut near it stays at its key frame. Chunks keep at least half a chunk."""
    pipeline = Gst.parse_launch(
        'filesrc name=src ! decodebin caps="video/x-raw(ANY)" expose-all-streams=false ! videoconvert '
        "! videoscale ! video/x-raw,format=GRAY8,width=64,height=36,pixel-aspect-ratio=1/1 ! appsink name=sink sync=false")
    pipeline.get_by_name("src").set_property("location", path)
    sink = pipeline.get_by_name("sink")

    def stream_time(sample):
        return sample.get_segment().to_stream_time(Gst.Format.TIME, sample.get_buffer().pts)

    def key_frame_at(position):
        if not pipeline.seek_simple(Gst.Format.TIME, Gst.SeekFlags.FLUSH | Gst.SeekFlags.KEY_UNIT | Gst.SeekFlags.SNAP_AFTER, position):
            return None
        pipeline.get_state(30 * Gst.SECOND)
        sample = sink.try_pull_preroll(5 * Gst.SECOND)
        return (stream_time(sample), _luma_histogram(sample)) if sample is not None else None

    def frames_between(start, stop):
        frames = []
        if not pipeline.seek(1.0, Gst.Format.TIME, Gst.SeekFlags.FLUSH | Gst.SeekFlags.ACCURATE,
                             Gst.SeekType.SET, start, Gst.SeekType.SET, stop):
            return frames
        pipeline.get_state(30 * Gst.SECOND)
        pipeline.set_state(Gst.State.PLAYING)
        while True:
            sample = sink.try_pull_sample(5 * Gst.SECOND)
            if sample is None:
                break
            frames.append((stream_time(sample), _luma_histogram(sample)))
        pipeline.set_state(Gst.State.PAUSED)
        pipeline.get_state(30 * Gst.SECOND)
        return frames

    moved = list(starts)
    try:
        pipeline.set_state(Gst.State.PAUSED)
        if pipeline.get_state(30 * Gst.SECOND)[0] != Gst.StateChangeReturn.SUCCESS:
            return moved
        window = int(chunk_ns * SCENE_CUT_SEARCH)
        for i in range(1, len(moved)):
            low = max(moved[i - 1] + chunk_ns // 2, moved[i] - window)
            high = min(moved[i] + window, (moved[i + 1] if i + 1 < len(moved) else duration) - chunk_ns // 2)
            if high <= low:
                continue
            # The key frames in the window (and the one at or after its start).
            keys = []
            position = low
            while position < high:
                found = key_frame_at(position)
                # Past the last key frame a SNAP_AFTER seek lands on the one before, and its stream
                # time can come back as the position asked for (1 ns after the last key frame's):
                # a key frame within a millisecond of the one before is that one again.
                if found is None or found[0] >= high or (keys and found[0] <= keys[-1][0] + Gst.MSECOND):
                    break
                keys.append(found)
                position = found[0] + 1
            if len(keys) < 2:
                continue
            changes = [(_distance(a[1], b[1]), a[0], b[0]) for a, b in zip(keys, keys[1:])]
            change, first, last = max(changes)
            if change < SCENE_CUT_DISTANCE:
                continue
            frames = frames_between(first, last + 1)
            if len(frames) < 2:
                continue
            distance, cut = max((_distance(a[1], b[1]), b[0]) for a, b in zip(frames, frames[1:]))
            if distance >= SCENE_CUT_DISTANCE and low <= cut < high:
                moved[i] = cut
    finally:
        pipeline.set_state(Gst.State.NULL)
    return moved


def run_tool(command, what):
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        lines = [line for line in completed.stderr.splitlines() if line.strip()]
        raise JobError(f"{what} failed (exit {completed.returncode}): {lines[-1] if lines else 'no message'}")
    return completed.stdout


def parse_plan(text):
    """The planner's stdout (contract): chunks to re-encode with their ranges, totals, decision."""
    chunks, totals, decision = {}, {}, None
    current = None
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "chunk":
            # "chunk INDEX FRAMES PATH": the path last, whole (it may hold spaces).
            _, index, frames, plan_file = line.split(" ", 3)
            current = int(index)
            chunks[current] = {"plan_file": plan_file, "frames": int(frames), "ranges": []}
        elif words[0] == "range":
            chunks[int(words[1])]["ranges"].append([int(words[2]), int(words[3])])
        elif words[0] == "totals":
            totals = {k: float(v) for k, v in (item.split("=", 1) for item in words[1:])}
        elif words[0] == "decision":
            decision = (words[1], " ".join(words[2:]))
    if decision is None:
        raise JobError(f"swiftvt-farm plan printed no decision: {text.strip()!r}")
    return chunks, totals, decision


def mux(Gst, splice_path, output, probe_info):
    """The splice file (contract) into OUTPUT through appsrc ! mp4mux, written as a hidden temporary
    file beside OUTPUT and renamed to it once mp4mux reached EOS. Returns (frames, payload bytes)."""
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
            source.emit("end-of-stream")
            message = bus.timed_pop_filtered(300 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
            pipeline.set_state(Gst.State.NULL)
            if message is None or message.type != Gst.MessageType.EOS:
                raise JobError("mp4mux did not finish: "
                               + (message.parse_error()[0].message if message else "no EOS in 300 s"))
            # mkstemp made the file private (0600); OUTPUT gets the mode any new file gets here.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(partial, 0o666 & ~umask)
            os.replace(partial, output)
            partial = None
        finally:
            if partial is not None:
                os.unlink(partial)
    return frames, payload


# The one-host encode's GOP: vtmultipasssink, like swiftvt-farm encode without
# --max-keyframe-interval, starts an IDR picture at least every 10 s (and at scene cuts).
GOP_SECONDS = 10.0


def default_chunk_seconds(duration_s, workers):
    """4 chunks per worker (workers = Dask threads), so that while the last chunks of a pass run the
    other workers wait for at most about a quarter of their share; but no more chunks than the GOPs
    of the one-host encode, ceil(duration / GOP_SECONDS). Every chunk starts with an IDR picture:
    with that cap the farm codes no more of them than vtmultipasssink does on the same input, and
    boundaries snapped to scene cuts put them where it puts its own. A clip of one GOP is one chunk:
    splitting it adds an I picture the one-host encode does not have (the 300-frame 720p clip of
    bench/farm.sh at 1000 kbit/s in 2 chunks: 0.2 dB of PSNR-Y below vtmultipasssink's).

    The cap also keeps chunks at least 5 s long, which the rate control needs: a re-encoded chunk
    runs in its own session, whose in-pass feedback (the bits each frame took against the plan's
    prediction) acts only on frames chosen after the first ones come out of the encoder, about
    60 frames (2 s at 30/s) of x264 look-ahead and frame threads later. 240 frames of 320x240
    patterns at 300 kbit/s ended +7.05 % off the target after 3 passes in 4 chunks of 2 s, -0.97 %
    in 2 chunks of 4 s (vtmultipasssink, one session: -0.87 %).

    Where fewer chunks than 4 per worker are left, their count is rounded down to a multiple of the
    workers when above it, so that no worker is left with one more chunk than the others."""
    gops = max(1, math.ceil(duration_s / GOP_SECONDS - 1e-6))
    count = min(4 * workers, gops)
    if count > workers:
        count -= count % workers
    return duration_s / count


def main(argv):
    args = parse_arguments(argv)
    wall_start = time.time()
    timings = {"input": args.input, "output": args.output, "bitrate_kbit": args.bitrate, "client": {}, "passes": []}

    # Checks before any work: the input, the tool, the output's folder.
    if not os.path.exists(args.input):
        raise JobError(f"{args.input} does not exist")
    if not os.path.isfile(args.input) or not os.access(args.input, os.R_OK):
        raise JobError(f"{args.input} is not a readable file")
    output_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(output_dir) or not os.access(output_dir, os.W_OK):
        raise JobError(f"cannot write {args.output}: {output_dir} is not a writable folder")
    farm_tool = _resolve_farm_tool(args.farm_tool)
    if farm_tool is None:
        raise JobError(f"swiftvt-farm not found ({args.farm_tool or os.environ.get('SWIFTVT_FARM_TOOL') or 'swiftvt-farm on PATH'}): "
                       "build it (meson compile -C build) and pass --farm-tool or set SWIFTVT_FARM_TOOL")
    if args.shared_dir and not os.path.isdir(args.shared_dir):
        raise JobError(f"--shared-dir {args.shared_dir} is not a folder")

    Gst, GstPbutils = init_gstreamer()
    t = time.time()
    info = probe(Gst, GstPbutils, args.input)
    timings["client"]["probe_s"] = time.time() - t
    duration_s = info["duration"] / 1e9

    import distributed
    t = time.time()
    cluster = None
    try:
        if args.scheduler:
            try:
                client = distributed.Client(args.scheduler, timeout="10s")
            except (OSError, TimeoutError) as error:
                raise JobError(f"cannot reach the Dask scheduler at {args.scheduler}: {error}") from None
            wanted = args.workers or 1
            try:
                client.wait_for_workers(wanted, timeout=60)
            except TimeoutError:
                client.close()
                raise JobError(f"the Dask scheduler at {args.scheduler} has fewer than {wanted} worker(s) after 60 s") from None
        else:
            # Workers log errors only: their warnings about a failed task print its arguments,
            # the input's bytes among them.
            cluster = distributed.LocalCluster(n_workers=args.workers or os.cpu_count() or 1,
                                               threads_per_worker=args.threads_per_worker, processes=True,
                                               dashboard_address=None, silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
        return run_job(args, client, Gst, info, duration_s, farm_tool, timings, wall_start, t)
    finally:
        if "client" in locals():
            client.close()
        if cluster is not None:
            cluster.close()


def run_job(args, client, Gst, info, duration_s, farm_tool, timings, wall_start, cluster_start):
    import distributed
    hosts = client.run(check_worker_host, args.farm_tool)
    for address, host in hosts.items():
        if host["problem"]:
            raise JobError(host["problem"])
    worker_count = len(hosts)
    threads = sum(client.nthreads().values())
    timings["client"]["cluster_s"] = time.time() - cluster_start
    timings.update(workers=worker_count, threads=threads)

    # Chunks.
    t = time.time()
    chunk_seconds = args.chunk_seconds or default_chunk_seconds(duration_s, threads)
    starts = key_frame_boundaries(Gst, args.input, info["duration"], int(chunk_seconds * 1e9))
    starts = scene_cut_boundaries(Gst, args.input, starts, info["duration"], int(chunk_seconds * 1e9))
    # The first chunk has no lower bound and the last no upper one (None): every frame of the input
    # belongs to exactly one chunk, also one whose stream time is below 0 or past the duration.
    # Their labels read 0 and the duration.
    chunks = []
    for i, start in enumerate(starts):
        stop = starts[i + 1] if i + 1 < len(starts) else None
        label_start, label_stop = start, stop if stop is not None else info["duration"]
        chunks.append({"index": i, "start": None if i == 0 else start, "stop": stop,
                       "label": f"chunk {i} ({label_start / 1e9:.3f} s – {label_stop / 1e9:.3f} s)",
                       "start_s": label_start / 1e9, "stop_s": label_stop / 1e9})
    timings["client"]["cut_s"] = time.time() - t
    timings["chunks"] = [{k: c[k] for k in ("index", "start_s", "stop_s")} for c in chunks]
    print(f"multipass-farm: {args.input}: {info['width']}x{info['height']} at {info['fps_n']}/{info['fps_d']}, "
          f"{duration_s:.3f} s; {len(chunks)} chunks of about {chunk_seconds:.2f} s at key frames or scene cuts; "
          f"{worker_count} worker(s), {threads} thread(s){' at ' + args.scheduler if args.scheduler else ' (LocalCluster)'}",
          flush=True)

    work = tempfile.mkdtemp(prefix="swiftvt-farm-job-")
    shared_job_dir = None
    try:
        # The input goes to the workers once: scattered to every worker (broadcast), or in the shared folder.
        t = time.time()
        if args.shared_dir:
            shared_job_dir = tempfile.mkdtemp(dir=args.shared_dir, prefix="swiftvt-farm-job-")
            input_ref = os.path.join(shared_job_dir, "input" + os.path.splitext(args.input)[1])
            shutil.copyfile(args.input, input_ref)
            input_key = None
        else:
            with open(args.input, "rb") as f:
                data = f.read()
            input_ref = client.scatter(data, broadcast=True)
            # Only the hash part of the key: a task argument equal to a key of the graph would be
            # replaced by that key's data (here, the whole input) before the task runs.
            input_key = input_ref.key.rsplit("-", 1)[-1]
            del data
        timings["client"]["scatter_s"] = time.time() - t
        settings = {"farm_tool": args.farm_tool, "bits_per_second": int(round(args.bitrate * 1000)),
                    "encoder_threads": 1, "shared_dir": shared_job_dir, "pass": 1}

        def run_pass(number, jobs):
            """jobs: [(chunk, chunk_files or path or None, plan or None, seconds of video)] ->
            {index: result}. Submitted longest first: Dask runs tasks in submission order, and the
            longest-first list schedule keeps the end of a pass from waiting on one long chunk
            started last."""
            jobs = sorted(jobs, key=lambda job: -job[3])
            pass_settings = dict(settings, **{"pass": number})
            pass_start = time.time()
            futures = {}
            for chunk, files, plan, _ in jobs:
                future = client.submit(encode_chunk, chunk, input_ref, input_key, pass_settings, files, plan,
                                       pure=False, key=f"swiftvt-farm-pass{number}-chunk{chunk['index']}-{os.urandom(4).hex()}")
                futures[future] = chunk
            results = {}
            done = 0
            try:
                for future in distributed.as_completed(list(futures)):
                    chunk = futures[future]
                    if future.status == "error":
                        error = future.exception()
                        text = str(error)
                        if isinstance(error, distributed.KilledWorker):
                            text = f"{chunk['label']}: every worker that ran it died ({text})"
                        raise JobError(text)
                    if future.status != "finished":
                        # Cancelled by the scheduler: what the task depends on is gone. Dask cannot
                        # recompute scattered data, so losing every worker that held the input
                        # ends here.
                        raise JobError(f"{chunk['label']}: Dask gave up the task ({future.status}): "
                                       + ("the input's bytes were lost with the worker(s) holding them "
                                          "(scattered data cannot be recomputed); run again, or use --shared-dir"
                                          if input_key else "a worker or the scheduler went away"))
                    results[chunk["index"]] = future.result()
                    done += 1
                    print(f"pass {number}: {done}/{len(futures)} chunks done", flush=True)
                # How many times a worker died while running each task: the scheduler's count.
                keys = [f.key for f in futures]
                suspicious = client.run_on_scheduler(
                    lambda dask_scheduler, keys=keys: {k: dask_scheduler.tasks[k].suspicious for k in keys if k in dask_scheduler.tasks})
                for future, chunk in futures.items():
                    lost = suspicious.get(future.key, 0)
                    results[chunk["index"]]["attempts"] = 1 + lost
                    if lost:
                        print(f"pass {number}: {chunk['label']} was rerun: the worker it was given to "
                              f"died ({lost} time{'s' if lost > 1 else ''})", flush=True)
            finally:
                for future in futures:
                    future.cancel()
            timings["passes"].append({
                "pass": number, "wall_s": time.time() - pass_start, "submitted": pass_start,
                "chunks": [{"index": i, "worker": r["worker"], "host": r["host"], "started": r["started"],
                            "finished": r["finished"], "seconds": r["finished"] - r["started"],
                            "frames": r["frames"], "attempts": r["attempts"]} for i, r in sorted(results.items())]})
            return results

        # The chunks as they stand, on the client: {index: {name: bytes}} (or a shared path).
        results = run_pass(1, [(c, None, None, c["stop_s"] - c["start_s"]) for c in chunks])
        current = {i: (r["shared_path"] or r["files"]) for i, r in results.items()}
        chunk_dirs = [os.path.join(work, f"chunk-{i:04d}") for i in range(len(chunks))]

        def materialise(state):
            for i, held in state.items():
                shutil.rmtree(chunk_dirs[i], ignore_errors=True)
                if isinstance(held, str):
                    shutil.copytree(held, chunk_dirs[i])
                else:
                    _write_dir(chunk_dirs[i], held)

        materialise(current)
        passes_run, frames_reencoded = 1, 0
        plan_seconds = []
        decision = ("finished", "")
        previous = None
        totals = {}
        state_dir, plan_dir = os.path.join(work, "plan-state"), os.path.join(work, "plans")
        while True:
            t = time.time()
            shutil.rmtree(plan_dir, ignore_errors=True)
            plan_out = run_tool([farm_tool, "plan", "--bitrate", str(settings["bits_per_second"]),
                                 "--max-passes", str(args.max_passes), "--completed-passes", str(passes_run),
                                 "--state", state_dir, "--out", plan_dir] + chunk_dirs, "swiftvt-farm plan")
            plan_seconds.append(time.time() - t)
            planned, totals, decision = parse_plan(plan_out)
            coded, target = totals.get("coded_bits", 0), totals.get("target_bits", 0)
            print(f"plan after pass {passes_run}: {decision[0]} {decision[1]}".rstrip()
                  + (f"; coded {coded / 1e3:.0f} kbit, target {target / 1e3:.0f} kbit ({(coded / target - 1) * 100:+.2f} %)" if target else ""),
                  flush=True)
            if decision[0] == "taken-back":
                if previous is None:
                    raise JobError("swiftvt-farm plan took back pass 1, which has no pass before it")
                current = previous
                materialise(current)
                break
            if decision[0] != "another-pass":
                break
            if passes_run >= args.max_passes or not planned:
                raise JobError(f"swiftvt-farm plan asked for pass {passes_run + 1} "
                               f"{'beyond --max-passes ' + str(args.max_passes) if planned else 'without a chunk to re-encode'}")
            jobs = []
            for index, item in sorted(planned.items()):
                with open(item["plan_file"], "rb") as f:
                    plan = {"file": f.read(), "ranges": item["ranges"]}
                jobs.append((chunks[index], current[index], plan,
                             sum(stop - start for start, stop in item["ranges"]) / 1e9))
            previous = dict(current)  # the chunks before this pass, for a "taken-back" decision
            passes_run += 1
            pass_results = run_pass(passes_run, jobs)
            for index, result in pass_results.items():
                if result["frames"] != planned[index]["frames"]:
                    raise JobError(f"pass {passes_run}: {chunks[index]['label']}: {result['frames']} frames "
                                   f"re-encoded, the plan has {planned[index]['frames']}")
            frames_reencoded += sum(r["frames"] for r in pass_results.values())
            for i, r in pass_results.items():
                current[i] = r["shared_path"] or r["files"]
            materialise({i: current[i] for i in pass_results})
        timings["client"]["plan_s"] = plan_seconds

        t = time.time()
        splice_path = os.path.join(work, "splice.bin")
        splice_out = run_tool([farm_tool, "splice", "--output", splice_path] + chunk_dirs, "swiftvt-farm splice")
        timings["client"]["splice_s"] = time.time() - t
        t = time.time()
        frames, payload = mux(Gst, splice_path, args.output, info)
        timings["client"]["mux_s"] = time.time() - t
    finally:
        if args.keep_work:
            print(f"multipass-farm: work folder kept: {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
        if shared_job_dir:
            shutil.rmtree(shared_job_dir, ignore_errors=True)

    seconds = frames * info["fps_d"] / info["fps_n"] if info["fps_n"] else duration_s
    if info["fps_n"] and frames < round(duration_s * info["fps_n"] / info["fps_d"]) - 2:
        print(f"multipass-farm: warning: {args.input} delivered {frames} frames where its duration "
              f"({duration_s:.3f} s at {info['fps_n']}/{info['fps_d']}) says "
              f"{round(duration_s * info['fps_n'] / info['fps_d'])}: its data ends early", file=sys.stderr, flush=True)
    kbps = payload * 8 / seconds / 1000
    wall = time.time() - wall_start
    used = passes_run - (1 if decision[0] == "taken-back" else 0)
    timings["client"]["total_s"] = wall
    timings.update(frames=frames, pass_count=passes_run, passes_kept=used, frames_reencoded=frames_reencoded,
                   kbit_per_s=kbps, decision=" ".join(decision).strip(), splice=splice_out.strip())
    print(f"multipass-farm: {args.output}: {frames} frames, {len(chunks)} chunks, {passes_run} pass(es)"
          + (f" (pass {passes_run} taken back)" if decision[0] == "taken-back" else "")
          + f", {frames_reencoded} frames re-encoded; {kbps:.2f} kbit/s, "
          f"{(kbps / args.bitrate - 1) * 100:+.2f} % off the target {args.bitrate:g} kbit/s; "
          f"{wall:.1f} s wall; {splice_out.strip()}", flush=True)
    if args.timings:
        with open(args.timings, "w") as f:
            json.dump(timings, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except JobError as error:
        print(f"multipass-farm: error: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        print("multipass-farm: interrupted", file=sys.stderr)
        sys.exit(130)
