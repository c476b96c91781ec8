"""The job's command line: arguments, the checks before any work, the Dask cluster, and the one
line a failure or an interruption ends with."""
import argparse
import logging
import os
import shutil
import sys
import tempfile
import time

from . import frameindex, streams
from .errors import JobError
from .job import run_job
from .worker import _resolve_farm_tool


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="multipass-farm.py",
        description="Multi-pass H.264 encoding of INPUT into OUTPUT, chunks encoded on Dask workers, "
                    "SwiftVT's multi-pass rate control planning for the whole file.")
    parser.add_argument("input", metavar="INPUT", help="any file decodebin reads (its first video stream)")
    parser.add_argument("output", metavar="OUTPUT",
                        help="the file to write: .mp4 or .m4v (mp4mux), .mov (qtmux) or .mkv (matroskamux), "
                             "with INPUT's audio tracks copied")
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
    parser.add_argument("--no-audio", action="store_true",
                        help="leave INPUT's audio out (by default every audio track is copied into OUTPUT as it is)")
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


def main(argv):
    args = parse_arguments(argv)
    wall_start = time.time()
    timings = {"input": args.input, "output": args.output, "bitrate_kbit": args.bitrate, "client": {}, "passes": []}

    # Checks before any work: the input, the tool, the output's folder.
    if not os.path.exists(args.input):
        raise JobError(f"{args.input} does not exist")
    if not os.path.isfile(args.input) or not os.access(args.input, os.R_OK):
        raise JobError(f"{args.input} is not a readable file")
    streams.muxer_for(args.output)
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
    work = tempfile.mkdtemp(prefix="swiftvt-farm-job-")
    try:
        return _with_cluster(args, Gst, GstPbutils, farm_tool, timings, wall_start, work)
    finally:
        if args.keep_work:
            print(f"multipass-farm: work folder kept: {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _with_cluster(args, Gst, GstPbutils, farm_tool, timings, wall_start, work):
    t = time.time()
    source = args.input
    container = frameindex.container_of(Gst, source)
    if container in ("video/x-h264", "video/x-h265"):
        source = os.path.join(work, "input.mp4")
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
        return run_job(args, client, Gst, source, info, index, farm_tool, timings, wall_start, t, work, output_streams)
    finally:
        if "client" in locals():
            client.close()
        if cluster is not None:
            cluster.close()


def run(argv):
    """main() with the job's exit statuses: 0 done, 1 a JobError (one line), 130 interrupted."""
    try:
        return main(argv)
    except JobError as error:
        print(f"multipass-farm: error: {error}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("multipass-farm: interrupted", file=sys.stderr)
        return 130
