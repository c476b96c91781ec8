"""The job's command line: arguments, the checks before any work, the job folder, the Dask
cluster, and the one line a failure or an interruption ends with."""
import argparse
import contextlib
import glob
import logging
import os
import signal
import sys
import tempfile
import time

from . import frameindex, streams
from .errors import JobError
from .job import run_job
from .jobfolder import WRAPPED_INPUT, JobFolder, file_sha256
from .worker import _resolve_farm_tool

# What `swiftvt-farm plan` takes (Sources/MultiPassFarm/PlanCommand.swift: --max-passes in 1...10,
# --bitrate in 1...2_000_000_000 bits/s); vtmultipasssink's max-passes has the same range.
MAX_PASSES = 10
MAX_BITS_PER_SECOND = 2_000_000_000


class JobInterrupted(Exception):
    """Ctrl-C: the job stopped; its message says what was kept."""


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        """One line, as the job's other errors (argparse prints its whole usage first), exit 2."""
        print(f"multipass-farm: error: {message} (--help lists the options)", file=sys.stderr, flush=True)
        sys.exit(2)


def parse_arguments(argv):
    parser = _ArgumentParser(
        prog="multipass-farm.py",
        description="Multi-pass H.264 encoding of INPUT into OUTPUT, chunks encoded on Dask workers, "
                    "SwiftVT's multi-pass rate control planning for the whole file. A job that stopped "
                    "(Ctrl-C, a killed client, a lost scheduler) goes on from where it was when run again "
                    "with the same command.")
    parser.add_argument("input", metavar="INPUT", help="any file decodebin reads (its first video stream)")
    parser.add_argument("output", metavar="OUTPUT",
                        help="the file to write: .mp4 or .m4v (mp4mux), .mov (qtmux) or .mkv (matroskamux), "
                             "with INPUT's audio tracks copied")
    parser.add_argument("--bitrate", type=float, required=True, metavar="KBITS",
                        help="target average bit rate of the whole file, kbit/s")
    parser.add_argument("--codec", choices=("h264", "h265"), default="h264",
                        help="h264 (x264, the default) or h265 (x265, HEVC in an hvc1 track; progressive input only)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="a running Dask scheduler (tcp://HOST:8786); default: a LocalCluster on this machine")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="LocalCluster worker processes (default: the CPU count); with --scheduler: "
                             "wait until N workers are connected (default 1)")
    parser.add_argument("--threads-per-worker", type=int, default=1, metavar="T",
                        help="Dask threads per LocalCluster worker, each running one chunk at a time (default 1)")
    parser.add_argument("--max-passes", type=int, default=3, metavar="N",
                        help=f"passes at most, the first included: 1 to {MAX_PASSES} (default 3)")
    parser.add_argument("--chunk-seconds", type=float, metavar="S",
                        help="chunk length before snapping to key frames or scene cuts (default: duration / (4 x "
                        "workers), but no more chunks than 10-s GOPs: see default_chunk_seconds)")
    parser.add_argument("--shared-dir", metavar="DIR",
                        help="a folder every worker host sees at the same path: the input and the chunk "
                             "directories go there and only paths move through Dask")
    parser.add_argument("--farm-tool", metavar="PATH",
                        help="swiftvt-farm on every host (default: $SWIFTVT_FARM_TOOL, else swiftvt-farm on PATH)")
    parser.add_argument("--timings", metavar="FILE.json", help="write per-pass, per-chunk timings here")
    parser.add_argument("--no-audio", action="store_true",
                        help="leave INPUT's audio out (by default every audio track is copied into OUTPUT as it is)")
    parser.add_argument("--work-dir", metavar="DIR",
                        help="where the job folder goes (chunk results, plans, the splice file: about the "
                             "output's size, twice over during a pass); default: beside OUTPUT, as .OUTPUT.farm")
    parser.add_argument("--no-resume", action="store_true",
                        help="start over even when the job folder holds the work of an earlier run of this job")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the job folder (chunk directories, plans, splice file) after "
                        "success and print its path")
    args = parser.parse_args(argv)
    if not (0 < args.bitrate * 1000 <= MAX_BITS_PER_SECOND) or round(args.bitrate * 1000) < 1:
        parser.error(f"--bitrate {args.bitrate:g} is out of range: 0.001 to {MAX_BITS_PER_SECOND // 1000} kbit/s")
    if not 1 <= args.max_passes <= MAX_PASSES:
        parser.error(f"--max-passes {args.max_passes} is out of range: 1 to {MAX_PASSES}, "
                     "as swiftvt-farm plan and vtmultipasssink take")
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.threads_per_worker < 1:
        parser.error("--threads-per-worker must be at least 1")
    if args.chunk_seconds is not None and args.chunk_seconds <= 0:
        parser.error("--chunk-seconds must be positive")
    return args


def init_gstreamer():
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
    """Width, height and frame rate of INPUT's first video stream (the caps the encoder is told;
    the frames themselves come from the frame index)."""
    discoverer = GstPbutils.Discoverer.new(30 * Gst.SECOND)
    try:
        info = discoverer.discover_uri(Gst.filename_to_uri(os.path.abspath(path)))
    except Exception as error:  # GLib.Error: the file is not a format GStreamer reads
        raise JobError(f"cannot read {path}: {getattr(error, 'message', error)}") from None
    videos = info.get_video_streams()
    if not videos:
        raise JobError(f"{path} has no video stream")
    video = videos[0]
    return {"width": video.get_width(), "height": video.get_height(),
            "fps_n": video.get_framerate_num(), "fps_d": video.get_framerate_denom() or 1}


def check_writable_folder(folder, what):
    """JobError unless a file can be made in `folder`. Made and removed for real: os.access says
    yes to root everywhere, and to anyone on a file system that refuses later (sysfs, a full or
    read-only export that is not mounted read-only here)."""
    if not os.path.isdir(folder):
        raise JobError(f"{what}: {folder} is not a folder")
    try:
        descriptor, probe_path = tempfile.mkstemp(dir=folder, prefix=".multipass-farm-probe-")
    except OSError as error:
        raise JobError(f"{what}: cannot write in {folder} ({error.strerror})") from None
    os.close(descriptor)
    os.unlink(probe_path)


def check_before_work(args):
    """Everything that can be known wrong before any work, each with one line; the resolved
    swiftvt-farm."""
    if not os.path.exists(args.input):
        raise JobError(f"{args.input} does not exist")
    if not os.path.isfile(args.input) or not os.access(args.input, os.R_OK):
        raise JobError(f"{args.input} is not a readable file")
    streams.muxer_for(args.output)
    if os.path.isdir(args.output):
        raise JobError(f"{args.output} is a folder: give the output file's name")
    if os.path.exists(args.output) and os.path.samefile(args.input, args.output):
        raise JobError(f"{args.output} is the same file as the input {args.input}: writing it would destroy "
                       "the input; give another output name")
    check_writable_folder(os.path.dirname(os.path.abspath(args.output)), f"cannot write {args.output}")
    if args.shared_dir:
        check_writable_folder(args.shared_dir, "--shared-dir")
    if args.work_dir:
        check_writable_folder(args.work_dir, "--work-dir")
    farm_tool = _resolve_farm_tool(args.farm_tool)
    if farm_tool is None:
        raise JobError("swiftvt-farm not found "
                       f"({args.farm_tool or os.environ.get('SWIFTVT_FARM_TOOL') or 'swiftvt-farm on PATH'}): "
                       "build it (meson compile -C build) and pass --farm-tool or set SWIFTVT_FARM_TOOL")
    return farm_tool


def remove_dead_partial_outputs(output):
    """The temporary files mux writes beside OUTPUT (`.NAME.XXXXXXXX.part`) that a killed job left:
    while this job owns OUTPUT's job folder, no other job of ours writes them."""
    directory, name = os.path.split(os.path.abspath(output))
    for path in glob.glob(os.path.join(glob.escape(directory), f".{glob.escape(name)}.*.part")):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def main(argv):
    args = parse_arguments(argv)
    wall_start = time.time()
    timings = {"input": args.input, "output": args.output, "bitrate_kbit": args.bitrate, "client": {}, "passes": []}
    farm_tool = check_before_work(args)
    folder = JobFolder.claim(args.output, args.work_dir)
    succeeded = False
    try:
        remove_dead_partial_outputs(args.output)
        Gst, GstPbutils = init_gstreamer()
        result = _with_cluster(args, Gst, GstPbutils, farm_tool, timings, wall_start, folder)
        succeeded = True
        return result
    except KeyboardInterrupt:
        raise JobInterrupted(_what_is_kept(folder)) from None
    except (JobError, OSError) as error:
        # An OSError is one of the job's own files (a full disk, a folder removed under it): its
        # text names the file and the reason.
        kept = _what_is_kept(folder)
        raise JobError(f"{error}{'; ' + kept if kept else ''}") from None
    finally:
        if succeeded and args.keep_work:
            print(f"multipass-farm: job folder kept: {folder.path}", flush=True)
            folder.keep()
        elif not succeeded and folder.has_work():
            folder.keep()
        else:
            folder.remove()


def _what_is_kept(folder):
    """What a stopped job keeps for the next run, in words ("" when nothing)."""
    if not folder.has_work():
        return ""
    return (f"{folder.describe()}, kept in {folder.path}: "
            "the same command goes on from there (--no-resume starts over)")


def _interrupted(signum, frame):
    """SIGINT: KeyboardInterrupt, after which the job's one line is all that is printed. Quiet
    from the signal on, before any cleanup runs: the futures cancelled on the way out make Dask's
    scheduler (it runs in this process) log that it cannot gather them, its shutdown logs every
    connection it closes (with tracebacks), and asyncio reports the tasks it cancels. A second
    Ctrl-C would interrupt the removal of the job's folders half-way: ignored until the job ends."""
    logging.disable(logging.CRITICAL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _start_local_cluster(args):
    """A LocalCluster whose worker processes ignore SIGINT. Ctrl-C in a terminal goes to the
    whole process group, the workers included; each would die printing its own traceback (and
    asyncio's) while the client, which stops them anyway, shuts down. Ignored while they are
    started: a process inherits SIG_IGN across exec, and CPython leaves a signal ignored at
    startup ignored (asyncio's runner then does not take it over either)."""
    import distributed
    # The workers' logging from their start: a worker removes the folders of dead workers (a job
    # killed with kill -9) and logs each at INFO before it applies silence_logs. Dask reads its
    # configuration from the environment when a worker process imports it.
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        # Workers log errors only: their warnings about a failed task print its arguments. The
        # scheduler's HTTP server (routes for the dashboard and health checks) on any free port:
        # on its default 8787, taken by another cluster, Dask warns.
        return distributed.LocalCluster(n_workers=args.workers or os.cpu_count() or 1,
                                        threads_per_worker=args.threads_per_worker, processes=True,
                                        dashboard_address=":0", scheduler_kwargs={"dashboard": False},
                                        silence_logs=logging.ERROR)
    finally:
        signal.signal(signal.SIGINT, previous)


def _with_cluster(args, Gst, GstPbutils, farm_tool, timings, wall_start, folder):
    t = time.time()
    input_identity = {"input": os.path.abspath(args.input), "input_size": os.path.getsize(args.input),
                      "input_sha256": file_sha256(args.input), "farm_tool_sha256": file_sha256(farm_tool)}
    source = args.input
    container = frameindex.container_of(Gst, source)
    if container in ("video/x-h264", "video/x-h265"):
        source = folder.file(WRAPPED_INPUT)
        frameindex.wrap_raw_stream(Gst, args.input, container, source)
        print(f"multipass-farm: {args.input} is a raw {container} stream: wrapped into an MP4 for seeking", flush=True)
    info = probe(Gst, GstPbutils, source)
    index = frameindex.build(Gst, source, container)
    # What OUTPUT carries besides the video: refused here, before the cluster and pass 1.
    output_streams = streams.plan(Gst, index, args.input, args.output, copy_audio=not args.no_audio)
    for note in output_streams.notes:
        print(f"multipass-farm: note: {note}", flush=True)
    timings["client"]["probe_s"] = time.time() - t

    import distributed
    t = time.time()
    cluster = client = None
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
                raise JobError(f"the Dask scheduler at {args.scheduler} has fewer than {wanted} "
                               "worker(s) after 60 s") from None
        else:
            cluster = _start_local_cluster(args)
            client = distributed.Client(cluster)
        return run_job(args, client, Gst, source, info, index, farm_tool, timings, wall_start, t,
                       folder, input_identity, output_streams)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


def run(argv):
    """main() with the job's exit statuses: 0 done, 1 a JobError (one line), 130 interrupted."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when started with SIGINT ignored
        signal.signal(signal.SIGINT, _interrupted)
    try:
        return main(argv)
    except JobError as error:
        print(f"multipass-farm: error: {error}", file=sys.stderr, flush=True)
        return 1
    except JobInterrupted as stopped:
        print(f"multipass-farm: interrupted{': ' + str(stopped) if str(stopped) else ''}", file=sys.stderr, flush=True)
        return 130
    except KeyboardInterrupt:  # before the job folder existed: nothing to say but this
        print("multipass-farm: interrupted", file=sys.stderr, flush=True)
        return 130
