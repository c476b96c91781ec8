"""The job on the client: the frame index, the chunks, the passes on Dask, the plans, the splice
and the mux. Every result is saved in the job folder (jobfolder) as it arrives, so that a rerun
of a stopped job goes on from there."""
import json
import os
import shutil
import sys
import time

from owned_folder import OwnedFolder, remove_dead

from . import chunking, jobfolder, planner
from .errors import JobError
from .mux import mux
from .worker import StopTasksAtClose, _read_dir, check_worker_host, encode_chunk, farm_tool_defaults

SHARED_JOB_PREFIX = "swiftvt-farm-job-"
# How many times a chunk of one pass is submitted again after Dask lost data it depends on (a
# worker holding scattered data died): each time the client scatters it again from what it holds.
RESUBMISSIONS = 3
SCATTER_ATTEMPTS = 3


def plural(count, word):
    """'1 chunk', '2 chunks', '2 passes'."""
    return f"{count} {word}" if count == 1 else f"{count} {word}{'es' if word.endswith('s') else 's'}"


def _identity(args, input_identity, chunks):
    """What the saved work of a job depends on (jobfolder: job.json)."""
    return dict(input_identity, version=jobfolder.IDENTITY_VERSION, bits_per_second=int(round(args.bitrate * 1000)),
                max_passes=args.max_passes, encoder_threads=1, chunk_seconds=args.chunk_seconds, codec=args.codec,
                chunks=[[c["first_frame"], c["frame_count"]] for c in chunks])


def _resume_or_start(args, folder, identity):
    """Keeps the saved work when it fits this run (one line says where it resumes), else empties
    the folder (one line says why, when there was work). Then job.json is this run's."""
    saved = folder.read_identity()
    if saved is not None and folder.has_work():
        why = "--no-resume" if args.no_resume else folder.mismatch(saved, identity)
        if why is None:
            print(f"multipass-farm: resuming the job in {folder.path}: {folder.describe()}", flush=True)
            return True
        print(f"multipass-farm: starting over ({why}): the earlier job's work in {folder.path} is removed", flush=True)
    folder.wipe()
    folder.write_identity(identity)
    return False


class _TaskData:
    """What the tasks of a pass depend on, scattered to the workers: the input (to every worker),
    the chunks' descriptions (to every worker: small) and, for a later pass, each chunk as it
    stands with its plan. Dask cannot recompute scattered data: when the workers holding some of
    it die, the tasks that need it are cancelled, and `refresh` scatters it again from the
    client's copies (the input file, the job folder)."""

    def __init__(self, client, source, chunks, shared):
        self.client, self.source, self.chunks, self.shared = client, source, chunks, shared
        self.input = self.input_key = None
        self.chunk_refs = [None] * len(chunks)

    def _scatter(self, data, **options):
        """client.scatter, tried again when a worker it sends to dies in the middle (a closed
        connection): the scheduler has dropped that worker a moment later."""
        for attempt in range(SCATTER_ATTEMPTS):
            try:
                return self.client.scatter(data, **options)
            except OSError as error:  # distributed.comm.CommClosedError and its kind
                if self.client.status != "running":
                    raise JobError("the connection to the Dask scheduler was lost") from None
                if attempt + 1 == SCATTER_ATTEMPTS:
                    raise JobError(f"Dask could not take the job's data to the workers {SCATTER_ATTEMPTS} "
                                   f"times: {error}") from None
                time.sleep(1)

    def refresh(self):
        """Scatters whatever is not (or no longer) on the workers."""
        if self.shared is not None:
            self.input, self.input_key = self.shared.input_path, None
        elif self.input is None or self.input.status != "finished":
            with open(self.source, "rb") as f:
                self.input = self._scatter(f.read(), broadcast=True)
            # Only the hash part of the key: a task argument equal to a key of the graph would be
            # replaced by that key's data (here, the whole input) before the task runs.
            self.input_key = self.input.key.rsplit("-", 1)[-1]
        lost = [i for i, ref in enumerate(self.chunk_refs) if ref is None or ref.status != "finished"]
        if lost:
            refs = self._scatter([self.chunks[i] for i in lost], broadcast=True, hash=False)
            for i, ref in zip(lost, refs):
                self.chunk_refs[i] = ref

    def previous(self, payload):
        [ref] = self._scatter([payload], hash=False)
        return ref


class _SharedFolder:
    """--shared-dir: this job's folder there (owned, so that the next job removes it if this one
    dies), the input copied into it once, the chunks the workers read and write."""

    def __init__(self, shared_dir, source):
        remove_dead(shared_dir, SHARED_JOB_PREFIX)
        self.owned = OwnedFolder.create(shared_dir, SHARED_JOB_PREFIX)
        self.path = self.owned.path
        self.input_path = os.path.join(self.path, "input" + os.path.splitext(source)[1])
        shutil.copyfile(source, self.input_path)
        self.chunks = {}  # index -> the chunk as it stands, in the shared folder

    def chunk(self, index, job_copy):
        """Chunk `index` as it stands, in the shared folder: the one a task wrote there, else (a
        resumed job) a copy of the job folder's."""
        if index not in self.chunks:
            path = os.path.join(self.path, f"resumed-chunk-{index:04d}")
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(job_copy, path)
            self.chunks[index] = path
        return self.chunks[index]


def run_job(args, client, Gst, source, info, index, farm_tool, timings, wall_start, cluster_start,
            folder, input_identity, output_streams=None):
    """The job on a connected Dask client: `source` is the file the workers decode (INPUT, or its
    wrapped copy in the job folder), `index` its frame index, `output_streams` what OUTPUT carries
    besides the video (streams.plan: the muxer, the audio tracks copied from `source`)."""
    import distributed
    hosts = client.run(check_worker_host, args.farm_tool)
    for address, host in hosts.items():
        if host["problem"]:
            raise JobError(host["problem"])
    client.register_worker_plugin(StopTasksAtClose())
    worker_count = len(hosts)
    threads = sum(client.nthreads().values())
    timings["client"]["cluster_s"] = time.time() - cluster_start
    timings.update(workers=worker_count, threads=threads)

    # Chunks, in the input's own time (the frame index): every frame belongs to exactly one.
    t = time.time()
    duration_s = index.duration / 1e9
    gop_seconds = farm_tool_defaults(farm_tool)["gop-seconds"]
    chunk_seconds = args.chunk_seconds or chunking.default_chunk_seconds(duration_s, threads, gop_seconds)
    chunk_ns = int(chunk_seconds * 1e9)
    at_key_frames = chunking.key_frame_boundaries(index, chunk_ns)
    starts = chunking.scene_cut_boundaries(Gst, source, index, at_key_frames, chunk_ns)
    cut_at_scene = {i for i, (moved, kept) in enumerate(zip(starts, at_key_frames)) if moved != kept}
    chunks = chunking.make_chunks(index, starts)
    timings["client"]["cut_s"] = time.time() - t
    timings["chunks"] = [{k: c[k] for k in ("index", "start_s", "stop_s", "frame_count")} for c in chunks]
    print(f"multipass-farm: {args.input}: {info['width']}x{info['height']} at {info['fps_n']}/{info['fps_d']}, "
          f"{len(index.frames)} frames from {index.start / 1e9:.3f} s to {index.end / 1e9:.3f} s ({duration_s:.3f} s); "
          f"{chunking.describe_chunks(index, chunks, chunk_seconds, args.chunk_seconds is not None, at_key_frames)}; "
          f"{plural(worker_count, 'worker')}, {plural(threads, 'thread')}"
          f"{' at ' + args.scheduler if args.scheduler else ' (LocalCluster)'}",
          flush=True)

    resumed = _resume_or_start(args, folder, _identity(args, input_identity, chunks))
    timings["resumed"] = folder.describe() if resumed else None
    bits_per_second = int(round(args.bitrate * 1000))
    shared = None
    try:
        t = time.time()
        if args.shared_dir:
            try:
                shared = _SharedFolder(args.shared_dir, source)
            except OSError as error:
                raise JobError(f"cannot write the input into --shared-dir {args.shared_dir}: "
                               f"{error.strerror}") from None
        data = _TaskData(client, source, chunks, shared)
        data.refresh()
        timings["client"]["scatter_s"] = time.time() - t
        settings = {"farm_tool": args.farm_tool, "bits_per_second": bits_per_second, "codec": args.codec,
                    "encoder_threads": 1, "shared_dir": shared.path if shared else None, "pass": 1}

        def previous_of(number, chunk_index, plan):
            """What a task of pass `number` (> 1) needs besides the input: the chunk after the pass
            before, and its plan (scattered: as task arguments they would go through the
            scheduler, which Dask warns about from 1 MB on)."""
            job_copy = folder.chunk_dir(number - 1, chunk_index)
            with open(plan["plan_file"], "rb") as f:
                plan_bytes = f.read()
            payload = {"plan": {"file": plan_bytes, "ranges": plan["ranges"]}, "files": None, "path": None}
            if shared is not None:
                payload["path"] = shared.chunk(chunk_index, job_copy)
            else:
                payload["files"] = _read_dir(job_copy)
            return data.previous(payload)

        def run_pass(number, plans):
            """Encodes the chunks of pass `number` that have no saved result ({chunk index: its plan
            from the plan before, None in pass 1}), each saved in the job folder as it arrives.
            Submitted longest first: Dask runs tasks in submission order, and the longest-first
            list schedule keeps the end of a pass from waiting on one long chunk started last."""
            kept = sorted(set(plans) & folder.results_of(number))

            def seconds(i):
                plan = plans[i]
                return (chunks[i]["stop_s"] - chunks[i]["start_s"] if plan is None
                        else sum(stop - start for start, stop in plan["ranges"]) / 1e9)
            todo = sorted(set(plans) - set(kept), key=lambda i: -seconds(i))
            pass_settings = dict(settings, **{"pass": number})
            pass_start = time.time()
            futures, losses, reports = {}, {}, {}

            def submit(i):
                previous = None if plans[i] is None else previous_of(number, i, plans[i])
                future = client.submit(encode_chunk, data.chunk_refs[i], data.input, data.input_key, pass_settings,
                                       previous, pure=False,
                                       key=f"swiftvt-farm-pass{number}-chunk{i}-{os.urandom(4).hex()}")
                futures[future] = i
                return future

            pending = distributed.as_completed([submit(i) for i in todo])
            done = len(kept)
            try:
                for future in pending:
                    i = futures[future]
                    chunk = chunks[i]
                    if future.status == "error":
                        error = future.exception()
                        text = str(error)
                        if isinstance(error, distributed.KilledWorker):
                            text = f"{chunk['label']}: every worker that ran it died ({text})"
                        raise JobError(text)
                    if future.status != "finished":
                        # Cancelled by the scheduler: data the task depends on was lost with the
                        # worker(s) holding it (or the scheduler went away).
                        losses[i] = losses.get(i, 0) + 1
                        if client.status != "running" or losses[i] > RESUBMISSIONS:
                            raise JobError("the connection to the Dask scheduler was lost" if client.status != "running"
                                           else f"{chunk['label']}: Dask gave up the task ({future.status}): "
                                                f"the data it needs was lost {losses[i]} times with the workers "
                                                "holding it")
                        print(f"pass {number}: {chunk['label']} submitted again: the data it needs was lost with "
                              "the worker holding it", flush=True)
                        data.refresh()
                        pending.add(submit(i))
                        continue
                    result = future.result()
                    if plans[i] is not None and result["frames"] != plans[i]["frames"]:
                        raise JobError(f"pass {number}: {chunk['label']}: {result['frames']} frames "
                                       f"re-encoded, the plan has {plans[i]['frames']}")
                    report = {k: result[k] for k in ("frames", "bits", "first_picture_bits", "worker", "host",
                                                     "started", "finished")}
                    if result["shared_path"] is not None:
                        folder.save_result(number, i, copy_from=result["shared_path"], report=report)
                        shared.chunks[i] = result["shared_path"]
                    else:
                        folder.save_result(number, i, files=result["files"], report=report)
                    reports[future] = report
                    done += 1
                    print(f"pass {number}: {done}/{len(plans)} chunks done", flush=True)
                # How many times a worker died while running each task: the scheduler's count.
                keys = [f.key for f in reports]
                suspicious = client.run_on_scheduler(
                    lambda dask_scheduler, keys=keys: {k: dask_scheduler.tasks[k].suspicious for k in keys
                                                       if k in dask_scheduler.tasks})
                for future, report in reports.items():
                    lost = suspicious.get(future.key, 0)
                    report["attempts"] = 1 + lost
                    if lost:
                        print(f"pass {number}: {chunks[futures[future]]['label']} was rerun: "
                              f"the worker it was given to died ({lost} time{'s' if lost > 1 else ''})", flush=True)
            finally:
                for future in futures:
                    future.cancel()
            timings["passes"].append({
                "pass": number, "wall_s": time.time() - pass_start, "submitted": pass_start,
                "chunks": sorted(({"index": futures[f], "worker": r["worker"], "host": r["host"],
                                   "started": r["started"],
                                   "finished": r["finished"], "seconds": r["finished"] - r["started"],
                                   "frames": r["frames"], "attempts": r["attempts"]} for f, r in reports.items()),
                                 key=lambda c: c["index"]),
                "resumed_chunks": kept})

        def make_plan(number, frames_reencoded):
            """The plan after pass `number`, saved with the planner's state as it left it."""
            chunk_dirs = [folder.chunk_dir(number, i) for i in range(len(chunks))]
            staging = folder.stage_plan(number)
            text = planner.run_tool([farm_tool, "plan", "--bitrate", str(bits_per_second),
                                     "--max-passes", str(args.max_passes), "--completed-passes", str(number),
                                     "--codec", args.codec,
                                     "--state", os.path.join(staging, "state"), "--out", os.path.join(staging, "plans")]
                                    + chunk_dirs, "swiftvt-farm plan")
            folder.commit_plan(number, staging, text, {"frames_reencoded": frames_reencoded})
            return text

        def warn_about_short_chunks(pass_one):
            cost = chunking.extra_key_picture_cost(chunks, pass_one, duration_s, cut_at_scene, gop_seconds)
            if cost is not None:
                print(f"multipass-farm: warning: chunks this short start {cost[0]} more IDR "
                      f"picture{'s' if cost[0] > 1 else ''} than vtmultipasssink would code (one per "
                      f"{gop_seconds:g} s and at scene cuts); in pass 1 {'they' if cost[0] > 1 else 'it'} "
                      f"took {cost[1] * 100:.1f} % of the bits beyond an average frame, "
                      "which the other frames lose at this bit rate; without --chunk-seconds the chunks are as long as "
                      "the one-host GOPs", file=sys.stderr, flush=True)

        # The passes: from the last saved plan on (a resumed job), else from pass 1.
        last = folder.last_plan()
        number, text, progress = last if last else (0, None, {"frames_reencoded": 0})
        frames_reencoded = progress["frames_reencoded"]
        plan_seconds = []
        while True:
            if text is not None:
                planned, totals, decision = planner.parse_plan(text)
                for item in planned.values():
                    item["plan_file"] = folder.plan_file(number, item["plan_file"])
                if decision[0] != "another-pass":
                    break
                if number >= args.max_passes or not planned:
                    where = f"beyond --max-passes {args.max_passes}" if planned else "without a chunk to re-encode"
                    raise JobError(f"swiftvt-farm plan asked for pass {number + 1} {where}")
                folder.prune(number, len(chunks))
                plans = planned
            else:
                plans = {i: None for i in range(len(chunks))}
            number += 1
            run_pass(number, plans)
            if number == 1:
                warn_about_short_chunks({i: folder.result_report(1, i) for i in plans})
            else:
                frames_reencoded += sum(folder.result_report(number, i)["frames"] for i in plans)
            t = time.time()
            text = make_plan(number, frames_reencoded)
            plan_seconds.append(time.time() - t)
            planned, totals, decision = planner.parse_plan(text)
            coded, target = totals.get("coded_bits", 0), totals.get("target_bits", 0)
            print(f"plan after pass {number}: {decision[0]} {decision[1]}".rstrip()
                  + (f"; coded {coded / 1e3:.0f} kbit, target {target / 1e3:.0f} kbit "
                     f"({(coded / target - 1) * 100:+.2f} %)" if target else ""),
                  flush=True)
        timings["client"]["plan_s"] = plan_seconds
        passes_run = number
        if decision[0] == "taken-back":
            if number == 1:
                raise JobError("swiftvt-farm plan took back pass 1, which has no pass before it")
            kept_pass = number - 1
        else:
            kept_pass = number

        t = time.time()
        splice_path = folder.file("splice.bin")
        splice_out = planner.run_tool([farm_tool, "splice", "--output", splice_path]
                                      + [folder.chunk_dir(kept_pass, i)
                                         for i in range(len(chunks))], "swiftvt-farm splice")
        timings["client"]["splice_s"] = time.time() - t
        t = time.time()
        written = mux(Gst, splice_path, args.output, info, len(index.frames), source, output_streams)
        timings["client"]["mux_s"] = time.time() - t
    finally:
        if shared is not None:
            shared.owned.remove()

    # The report is what was written: its frames, and its bit rate over the span of their time stamps.
    frames, payload, seconds = written["frames"], written["payload"], written["seconds"]
    kbps = payload * 8 / seconds / 1000 if seconds > 0 else 0.0
    wall = time.time() - wall_start
    timings["client"]["total_s"] = wall
    timings.update(frames=frames, pass_count=passes_run, passes_kept=kept_pass, frames_reencoded=frames_reencoded,
                   kbit_per_s=kbps, decision=" ".join(decision).strip(), splice=splice_out.strip())
    for note in written["notes"]:
        print(f"multipass-farm: note: {note}", flush=True)
    audio = written["audio_tracks"]
    print(f"multipass-farm: {args.output}: {frames} frames, {seconds:.3f} s, "
          f"{audio} audio track{'' if audio == 1 else 's'} copied, {plural(len(chunks), 'chunk')}, "
          f"{plural(passes_run, 'pass')}"
          + (f" (pass {passes_run} taken back)" if decision[0] == "taken-back" else "")
          + f", {frames_reencoded} frames re-encoded; {kbps:.2f} kbit/s, "
          f"{(kbps / args.bitrate - 1) * 100:+.2f} % off the target {args.bitrate:g} kbit/s; "
          f"{wall:.1f} s wall; {splice_out.strip()}", flush=True)
    if args.timings:
        with open(args.timings, "w") as f:
            json.dump(timings, f, indent=1)
    return 0
