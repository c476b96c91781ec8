"""The job on the client: the frame index, the chunks, the passes on Dask, the plans, the splice
and the mux."""
import json
import os
import shutil
import sys
import tempfile
import time

from . import chunking, frameindex, planner, worker
from .errors import JobError
from .mux import mux
from .worker import _write_dir, check_worker_host, encode_chunk


def run_job(args, client, Gst, source, info, index, farm_tool, timings, wall_start, cluster_start, work, output_streams=None):
    """The job on a connected Dask client: `source` is the file the workers decode (INPUT, or its
    wrapped copy in `work`), `index` its frame index, `output_streams` what OUTPUT carries besides
    the video (streams.plan: the muxer, the audio tracks copied from `source`)."""
    import distributed
    hosts = client.run(check_worker_host, args.farm_tool)
    for address, host in hosts.items():
        if host["problem"]:
            raise JobError(host["problem"])
    worker_count = len(hosts)
    threads = sum(client.nthreads().values())
    timings["client"]["cluster_s"] = time.time() - cluster_start
    timings.update(workers=worker_count, threads=threads)

    # Chunks, in the input's own time (the frame index): every frame belongs to exactly one.
    t = time.time()
    duration_s = index.duration / 1e9
    chunk_seconds = args.chunk_seconds or chunking.default_chunk_seconds(duration_s, threads)
    chunk_ns = int(chunk_seconds * 1e9)
    key_frame_starts = chunking.key_frame_boundaries(index, chunk_ns)
    starts = chunking.scene_cut_boundaries(Gst, source, index, key_frame_starts, chunk_ns)
    cut_at_scene = {i for i, (moved, kept) in enumerate(zip(starts, key_frame_starts)) if moved != kept}
    chunks = chunking.make_chunks(index, starts)
    timings["client"]["cut_s"] = time.time() - t
    timings["chunks"] = [{k: c[k] for k in ("index", "start_s", "stop_s", "frame_count")} for c in chunks]
    print(f"multipass-farm: {args.input}: {info['width']}x{info['height']} at {info['fps_n']}/{info['fps_d']}, "
          f"{len(index.frames)} frames from {index.start / 1e9:.3f} s to {index.end / 1e9:.3f} s ({duration_s:.3f} s); "
          f"{len(chunks)} chunks of about {chunk_seconds:.2f} s at key frames or scene cuts; "
          f"{worker_count} worker(s), {threads} thread(s){' at ' + args.scheduler if args.scheduler else ' (LocalCluster)'}",
          flush=True)

    shared_job_dir = None
    try:
        # The input goes to the workers once: scattered to every worker (broadcast), or in the shared folder.
        t = time.time()
        if args.shared_dir:
            shared_job_dir = tempfile.mkdtemp(dir=args.shared_dir, prefix="swiftvt-farm-job-")
            input_ref = os.path.join(shared_job_dir, "input" + os.path.splitext(source)[1])
            shutil.copyfile(source, input_ref)
            input_key = None
        else:
            with open(source, "rb") as f:
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
        cost = chunking.extra_key_picture_cost(chunks, results, duration_s, cut_at_scene)
        if cost is not None:
            print(f"multipass-farm: warning: chunks this short start {cost[0]} more IDR picture{'s' if cost[0] > 1 else ''} "
                  f"than vtmultipasssink would code (one per {chunking.GOP_SECONDS:g} s and at scene cuts); in pass 1 "
                  f"{'they' if cost[0] > 1 else 'it'} took {cost[1] * 100:.1f} % of the bits beyond an average frame, "
                  "which the other frames lose at this bit rate; without --chunk-seconds the chunks are as long as "
                  "the one-host GOPs", file=sys.stderr, flush=True)
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
            plan_out = planner.run_tool([farm_tool, "plan", "--bitrate", str(settings["bits_per_second"]),
                                 "--max-passes", str(args.max_passes), "--completed-passes", str(passes_run),
                                 "--state", state_dir, "--out", plan_dir] + chunk_dirs, "swiftvt-farm plan")
            plan_seconds.append(time.time() - t)
            planned, totals, decision = planner.parse_plan(plan_out)
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
            for chunk_index, item in sorted(planned.items()):
                with open(item["plan_file"], "rb") as f:
                    plan = {"file": f.read(), "ranges": item["ranges"]}
                jobs.append((chunks[chunk_index], current[chunk_index], plan,
                             sum(stop - start for start, stop in item["ranges"]) / 1e9))
            previous = dict(current)  # the chunks before this pass, for a "taken-back" decision
            passes_run += 1
            pass_results = run_pass(passes_run, jobs)
            for chunk_index, result in pass_results.items():
                if result["frames"] != planned[chunk_index]["frames"]:
                    raise JobError(f"pass {passes_run}: {chunks[chunk_index]['label']}: {result['frames']} frames "
                                   f"re-encoded, the plan has {planned[chunk_index]['frames']}")
            frames_reencoded += sum(r["frames"] for r in pass_results.values())
            for i, r in pass_results.items():
                current[i] = r["shared_path"] or r["files"]
            materialise({i: current[i] for i in pass_results})
        timings["client"]["plan_s"] = plan_seconds

        t = time.time()
        splice_path = os.path.join(work, "splice.bin")
        splice_out = planner.run_tool([farm_tool, "splice", "--output", splice_path] + chunk_dirs, "swiftvt-farm splice")
        timings["client"]["splice_s"] = time.time() - t
        t = time.time()
        written = mux(Gst, splice_path, args.output, info, len(index.frames), source, output_streams)
        timings["client"]["mux_s"] = time.time() - t
    finally:
        if shared_job_dir:
            shutil.rmtree(shared_job_dir, ignore_errors=True)

    # The report is what was written: its frames, and its bit rate over the span of their time stamps.
    frames, payload, seconds = written["frames"], written["payload"], written["seconds"]
    kbps = payload * 8 / seconds / 1000 if seconds > 0 else 0.0
    wall = time.time() - wall_start
    used = passes_run - (1 if decision[0] == "taken-back" else 0)
    timings["client"]["total_s"] = wall
    timings.update(frames=frames, pass_count=passes_run, passes_kept=used, frames_reencoded=frames_reencoded,
                   kbit_per_s=kbps, decision=" ".join(decision).strip(), splice=splice_out.strip())
    for note in written["notes"]:
        print(f"multipass-farm: note: {note}", flush=True)
    audio = written["audio_tracks"]
    print(f"multipass-farm: {args.output}: {frames} frames, {seconds:.3f} s, "
          f"{audio} audio track{'' if audio == 1 else 's'} copied, {len(chunks)} chunks, {passes_run} pass(es)"
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
