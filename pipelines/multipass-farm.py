#!/usr/bin/env python3
"""Multi-pass H.264 encoding of one file across machines: chunks encoded on Dask workers, SwiftVT's
multi-pass rate control deciding for the whole file (issue 22).

    /usr/bin/python3 pipelines/multipass-farm.py INPUT OUTPUT.mp4 --bitrate KBITS
        [--scheduler ADDRESS] [--workers N] [--threads-per-worker 1] [--max-passes 3]
        [--chunk-seconds S] [--shared-dir DIR] [--farm-tool PATH] [--timings FILE.json] [--no-audio]
        [--work-dir DIR] [--no-resume] [--keep-work]

1. The client lists INPUT's video frames as its container has them (one demuxing pass, nothing
   decoded: PTS, running time, duration, key frames) and cuts the list into chunks at key frames
   of the source or scene cuts. A raw H.264 stream is first wrapped into an MP4 for seeking.
2. Pass 1: one Dask task per chunk decodes its frames (an ACCURATE seek, frames matched by PTS) and feeds them to
   `swiftvt-farm encode`, which records the analysis (MultiPassStorage) and the compressed frames
   (FrameSilo) in a chunk directory that the task returns as {file name: bytes}.
3. `swiftvt-farm plan` (SwiftVT's own multi-pass rate control) reads every chunk's analysis and says
   which ranges of which chunks to re-encode; 4. the client submits those as tasks, and again after
   each pass until the planner says "finished" (or "taken-back": the last pass is undone).
5. `swiftvt-farm splice` joins the chunks into one stream (distinct idr_pic_id where chunks meet, one
   set of parameter sets, continuous time stamps) and the client muxes it with `appsrc ! mp4mux`
   (.mov: qtmux, .mkv: matroskamux) into a temporary file beside OUTPUT, renamed to OUTPUT when
   complete, with INPUT's audio tracks copied from a second demuxing of INPUT, in sync (mux.py;
   what OUTPUT carries is checked before pass 1: streams.py).

Dask does all scheduling and moving of data: the input is scattered to the workers once
(broadcast), chunk directories travel as task results and, scattered by the client, to the
chunk's next task. With --shared-dir, the input and the chunk directories live in a folder every
host sees and only paths travel.

Every chunk result and every plan is saved as it comes in the job folder beside OUTPUT
(.OUTPUT.farm): a job stopped on the way (Ctrl-C, kill -9, a lost scheduler) goes on from there
when run again with the same command, and writes the same stream (--no-resume starts over).
The byte contract between this job and swiftvt-farm is described in the README (section "The farm").

The code lives in pipelines/lib/swiftvt_farm/: frameindex (the input's frames as its container has
them), chunking, worker (the Dask tasks: pickled by value, so a `dask worker` started anywhere runs
them without this repository), planner, streams (what OUTPUT carries), mux, mp4edits (the
output's edit lists), jobfolder (what resume reads), job (the passes) and cli.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

from swiftvt_farm.chunking import default_chunk_seconds  # noqa: E402,F401 (tests and bench/farm.sh read it here)
from swiftvt_farm.cli import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
