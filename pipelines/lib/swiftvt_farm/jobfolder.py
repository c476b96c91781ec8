"""The job's folder: everything the job has done so far, kept on disk so that a job stopped on the
way (Ctrl-C, kill -9 of the client, a lost scheduler, a failure) is taken up again by the same
command from the chunks and passes already done, as chunked encoders do (av1an --resume).

It lies beside OUTPUT, named from it (`.OUTPUT.farm`; under --work-dir DIR: `DIR/.OUTPUT-HASH.farm`,
HASH from OUTPUT's absolute path), and holds:

    .owner.lock                 flock'd by the running job (owned_folder): a second job for the
                                same OUTPUT is refused, a dead one's folder is taken over
    job.json                    what the work depends on (below); written before pass 1
    pass-N/chunk-IIII/          chunk I as pass N left it: chunk/ (the chunk directory of
                                docs/farm.md) and result.json (what the task reported)
    plan-N/                     the plan after pass N: plan.txt (swiftvt-farm plan's stdout),
                                plans/chunk-I.plan, state/ (the planner's --state directory as
                                that plan left it) and progress.json
    input.mp4, splice.bin       a raw stream's MP4 wrapping; the splice file
    .partial-*                  being written: every entry above appears whole, by a rename

A rerun resumes when job.json matches: the same input content (size and SHA-256 of the whole
file), the same swiftvt-farm (SHA-256 of the client's), the same settings that change the
output (bit rate, maximum passes, encoder threads) and the same chunks. It skips the passes whose
plan is saved and the chunks of the pass in progress whose result is saved. Every step is
deterministic (x264 with one thread, a planner whose memory is the state/ snapshot), so the result
is the stream an uninterrupted run writes.

After each plan that asks for another pass, what no later step reads is removed: the plans
before it and the chunk results it supersedes. What stays is each chunk as it stands after the
last plan, which a "taken-back" decision of the next plan goes back to.
"""
import hashlib
import json
import os
import shutil
import tempfile

from owned_folder import OWNER_LOCK, OwnedFolder

from .errors import JobError
from .planner import parse_plan

IDENTITY_VERSION = 1
PARTIAL_PREFIX = ".partial-"
# A raw stream's MP4 wrapping, made by every run before it decides to resume or start over.
WRAPPED_INPUT = "input.mp4"


def file_sha256(path):
    """SHA-256 of the whole file: a resumed job must not splice chunks of another input into this
    one's, and a change anywhere (a re-export with the same size, a fixed frame in the middle)
    makes different chunks. Reading the input once more costs about what the frame index costs."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def location(output, work_dir=None):
    """The job folder for OUTPUT: beside it, or under --work-dir (there, outputs of the same name
    in different folders need different job folders)."""
    output = os.path.abspath(output)
    name = os.path.basename(output)
    if work_dir is None:
        return os.path.join(os.path.dirname(output), f".{name}.farm")
    return os.path.join(os.path.abspath(work_dir), f".{name}-{hashlib.sha256(output.encode()).hexdigest()[:12]}.farm")


class JobFolder:
    def __init__(self, owned):
        self._owned = owned
        self.path = owned.path

    @classmethod
    def claim(cls, output, work_dir=None):
        """The job folder of OUTPUT, owned by this job. JobError when another live job owns it or
        it cannot be made."""
        path = location(output, work_dir)
        try:
            owned = OwnedFolder.claim(path)
        except OSError as error:
            raise JobError(f"cannot make the job folder {path}: {error.strerror}") from None
        if owned is None:
            with open(os.path.join(path, OWNER_LOCK)) as f:
                pid = f.read().strip()
            raise JobError(f"another multipass-farm job (process {pid or 'unknown'}) is writing {output}: "
                           f"its folder {path} is in use")
        folder = cls(owned)
        # What a job killed in the middle of writing an entry left (never read: entries appear by rename).
        for name in os.listdir(path):
            if name.startswith(PARTIAL_PREFIX):
                _remove(os.path.join(path, name))
        return folder

    # -- the folder as a whole

    def remove(self):
        self._owned.remove()

    def keep(self):
        self._owned.release()

    def wipe(self):
        """Empties the folder, its lock and this run's wrapped input aside: the work of another job
        (or of this one, started over)."""
        for name in os.listdir(self.path):
            if name not in (OWNER_LOCK, WRAPPED_INPUT):
                _remove(os.path.join(self.path, name))

    def progress(self):
        """Where the saved work stands: (the pass in progress, chunks of it done, chunks it has),
        or (None, passes done, 0) when every pass is done."""
        last = self.last_plan()
        if last is None:
            chunk_count = len((self.read_identity() or {}).get("chunks", []))
            return 1, len(self.results_of(1)), chunk_count
        number, text, _ = last
        planned, _, decision = parse_plan(text)
        if decision[0] != "another-pass":
            return None, number, 0
        return number + 1, len(self.results_of(number + 1) & set(planned)), len(planned)

    def describe(self):
        """The saved work in words: "pass 2, 3 of 5 chunks done"."""
        number, done, count = self.progress()
        if number is None:
            return f"all {done} pass{'es' if done != 1 else ''} done, the splice and the mux left"
        return f"pass {number}, {done} of {count} chunk{'s' if count != 1 else ''} done"

    def has_work(self):
        """Whether the folder holds a chunk result: something a rerun would not have to do again."""
        return any(name.startswith("pass-") and os.listdir(os.path.join(self.path, name))
                   for name in os.listdir(self.path))

    def file(self, name):
        return os.path.join(self.path, name)

    # -- what the work depends on

    def read_identity(self):
        try:
            with open(self.file("job.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def write_identity(self, identity):
        self._write_json("job.json", identity)

    @staticmethod
    def mismatch(saved, identity):
        """Why the saved work does not fit this run (one phrase), or None when it does."""
        if saved.get("version") != IDENTITY_VERSION:
            return "its folder was written by another version of this job"
        if (saved.get("input_size"), saved.get("input_sha256")) != (identity["input_size"], identity["input_sha256"]):
            return f"the input differs from the one it encoded ({saved.get('input')}: its size or SHA-256 changed)"
        if saved.get("farm_tool_sha256") != identity["farm_tool_sha256"]:
            return "swiftvt-farm differs from the one that did the work (its SHA-256)"
        for key, option, unit in (("bits_per_second", "--bitrate", 1000), ("max_passes", "--max-passes", 1),
                                  ("encoder_threads", "encoder threads", 1)):
            if saved.get(key) != identity[key]:
                then = "?" if saved.get(key) is None else f"{saved[key] / unit:g}"
                return f"{option} differs ({then} then, {identity[key] / unit:g} now)"
        # Jobs saved before --codec existed encoded H.264.
        if saved.get("codec", "h264") != identity["codec"]:
            return f"--codec differs ({saved.get('codec', 'h264')} then, {identity['codec']} now)"
        if saved.get("chunks") != identity["chunks"]:
            return "the chunks differ (--chunk-seconds, or --workers with the default chunk length)"
        return None

    # -- chunk results

    def _result_path(self, number, index):
        return os.path.join(self.path, f"pass-{number}", f"chunk-{index:04d}")

    def has_result(self, number, index):
        return os.path.isdir(self._result_path(number, index))

    def results_of(self, number):
        """Chunk indices with a saved result of pass `number`."""
        try:
            names = os.listdir(os.path.join(self.path, f"pass-{number}"))
        except FileNotFoundError:
            return set()
        return {int(name[len("chunk-"):]) for name in names if name.startswith("chunk-")}

    def save_result(self, number, index, files=None, copy_from=None, report=None):
        """Saves chunk `index` as pass `number` left it ({name: bytes}, or a directory to copy),
        whole or not at all (written under a partial name, then renamed)."""
        os.makedirs(os.path.join(self.path, f"pass-{number}"), exist_ok=True)
        partial = tempfile.mkdtemp(dir=self.path, prefix=f"{PARTIAL_PREFIX}pass-{number}-chunk-{index}-")
        try:
            chunk = os.path.join(partial, "chunk")
            if copy_from is not None:
                shutil.copytree(copy_from, chunk)
            else:
                os.mkdir(chunk)
                for name, data in files.items():
                    with open(os.path.join(chunk, name), "wb") as f:
                        f.write(data)
            with open(os.path.join(partial, "result.json"), "w") as f:
                json.dump(report or {}, f)
            target = self._result_path(number, index)
            _remove(target)  # a rerun's result of the same pass: the same bytes
            os.rename(partial, target)
        except BaseException:
            _remove(partial)
            raise

    def result_report(self, number, index):
        with open(os.path.join(self._result_path(number, index), "result.json")) as f:
            return json.load(f)

    def chunk_dir(self, after_pass, index):
        """Chunk `index` as it stands after pass `after_pass`: the result of the last pass up to
        it that encoded the chunk."""
        for number in range(after_pass, 0, -1):
            path = self._result_path(number, index)
            if os.path.isdir(path):
                return os.path.join(path, "chunk")
        raise JobError(f"the job folder {self.path} lost chunk {index} (no result up to pass {after_pass}): "
                       "run again with --no-resume")

    # -- plans

    def _plan_path(self, number):
        return os.path.join(self.path, f"plan-{number}")

    def last_plan(self):
        """(pass number, plan.txt, progress) of the last saved plan, or None."""
        numbers = [int(name[len("plan-"):]) for name in os.listdir(self.path)
                   if name.startswith("plan-") and name[len("plan-"):].isdigit()]
        if not numbers:
            return None
        number = max(numbers)
        with open(os.path.join(self._plan_path(number), "plan.txt")) as f:
            text = f.read()
        with open(os.path.join(self._plan_path(number), "progress.json")) as f:
            progress = json.load(f)
        return number, text, progress

    def plan_file(self, number, planner_path):
        """Where a plan file the planner named (under its --out, a staging folder) lies now."""
        return os.path.join(self._plan_path(number), "plans", os.path.basename(planner_path))

    def stage_plan(self, number):
        """A staging folder for the plan after pass `number`: state/ as the plan before left it
        (the planner updates it in place, which must not touch the saved one), plans/ to come."""
        staging = tempfile.mkdtemp(dir=self.path, prefix=f"{PARTIAL_PREFIX}plan-{number}-")
        if number > 1:
            shutil.copytree(os.path.join(self._plan_path(number - 1), "state"), os.path.join(staging, "state"))
        return staging

    def commit_plan(self, number, staging, text, progress):
        with open(os.path.join(staging, "plan.txt"), "w") as f:
            f.write(text)
        with open(os.path.join(staging, "progress.json"), "w") as f:
            json.dump(progress, f)
        os.rename(staging, self._plan_path(number))

    def prune(self, number, chunk_count):
        """After the plan after pass `number` asked for another pass: the plans before it and the
        chunk results that chunk_dir(number, ...) no longer returns."""
        for name in os.listdir(self.path):
            if name.startswith("plan-") and name[len("plan-"):].isdigit() and int(name[len("plan-"):]) < number:
                _remove(os.path.join(self.path, name))
        for index in range(chunk_count):
            current = None
            for earlier in range(number, 0, -1):
                if self.has_result(earlier, index):
                    if current is None:
                        current = earlier
                    else:
                        _remove(self._result_path(earlier, index))

    def _write_json(self, name, value):
        fd, partial = tempfile.mkstemp(dir=self.path, prefix=PARTIAL_PREFIX)
        with os.fdopen(fd, "w") as f:
            json.dump(value, f, indent=1)
        os.replace(partial, self.file(name))


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
