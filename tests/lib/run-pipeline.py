#!/usr/bin/python3
"""Runs a GStreamer pipeline description like gst-launch-1.0, but can never hang.

gst-launch-1.0 1.22 quits its main loop from the bus *sync* handler (g_main_loop_quit): an ERROR
posted before g_main_loop_run() starts (an element failing during the first state change) is
lost, and gst-launch waits forever. This runner has no main loop: it polls the bus itself against
a deadline, and tears the pipeline down on a watchdog thread.

    run-pipeline.py [--timeout SECONDS] [--expect error|eos|any] [--quiet] [--report FILE.json]
                    [--report-property NAME] [--force-key-units FRAMES] [--] PIPELINE...

PIPELINE is one argument (parsed as it is) or several (joined as gst-launch-1.0 joins its
arguments: each one escaped, then separated by spaces). ERROR and WARNING messages are printed in
gst-launch-1.0's format, so the same greps work on either:

    ERROR: from element /GstPipeline:pipeline0/GstFileSrc:filesrc0: <text>
    Additional debug info:
    <debug string>
    Got EOS from element "pipeline0".

and a last line counts them: `run-pipeline: N error(s), M warning(s), ended by eos|error|timeout|
state-change-failure|signal`. After an ERROR the bus is read for 0.5 s more, so that an element
posting the same ERROR twice is counted twice (tests can require exactly one).

--report FILE.json writes what happened as data for tests to assert on instead of text:
{"ended_by": ..., "errors": [...], "warnings": [...]}, each message {"element": its name, "path",
"domain": the GError domain ("gst-stream-error-quark", ...), "code": its code, "message", "debug"}.
--report-property NAME (repeatable) adds "properties": {element name: {NAME: value}} for every
element of the pipeline that has the property, read when the run ends (before the teardown):
e.g. vtdec's active-backend after EOS. The report's "messages" are the element messages and progress
messages the elements posted, in order: {"element", "kind": "element" or "progress", "name": the
structure's name, "structure": its text (gst_structure_to_string), "text": a progress message's text}.
--force-key-units FRAMES (comma-separated frame numbers, counted from 0) sends a downstream
force-key-unit event (GstForceKeyUnit, what applications and splitmuxsink send) from the element
named `forcer` (an identity in front of the encoder) right before each of those frames; the encoder
must make them IDR pictures. The events ask for a key unit "as soon as possible" (running-time
GST_CLOCK_TIME_NONE), so the frame that follows each event is the one forced, whatever timestamp
offset the encoder applies (vtenc and x264enc shift PTS by 1000 hours with B-frames).

Exit status: 0 ended by EOS, 1 ended by ERROR (or a failed state change), 2 the description does
not parse, 3 the teardown (setting the pipeline to NULL) hung for 10 s, 124 timed out (like
timeout(1)), 130 SIGINT/SIGTERM. With --expect error, an ending by ERROR exits 0 and an EOS exits
1; with --expect eos the opposite (parse errors, hangs and signals keep their codes). --quiet
prints only errors, like gst-launch-1.0 -q (no WARNING, EOS or summary lines).

Needs only Debian's python3-gi and the GStreamer typelib (gir1.2-gstreamer-1.0); run by
/usr/bin/python3, which has them, whatever python3 comes first on PATH.
"""
import argparse
import faulthandler
import os
import signal
import sys
import threading
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, GObject, Gst  # noqa: E402

EXIT_EOS, EXIT_ERROR, EXIT_PARSE, EXIT_TEARDOWN_HUNG, EXIT_TIMEOUT, EXIT_SIGNAL = 0, 1, 2, 3, 124, 130
# How long to keep reading the bus after the first ERROR (duplicates are counted), how long the
# teardown may take, and the slice of each bus wait (how soon a signal is noticed).
DRAIN_SECONDS = 0.5
TEARDOWN_SECONDS = 10.0
POLL_SECONDS = 0.1


def out(text: str) -> None:
    """gst-launch-1.0 prints its progress and warnings on stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def err(text: str) -> None:
    """...and errors on stderr. Flushed at once: tests interleave both into one log."""
    sys.stdout.flush()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


REPORT = {"path": None, "ended_by": None, "errors": [], "warnings": [], "messages": []}


def element_properties(pipeline: Gst.Element, names) -> dict:
    """{element name: {property: value}} of the elements (any depth) that have the properties."""
    found = {}
    iterator = pipeline.iterate_recurse()
    while True:
        result, element = iterator.next()
        if result != Gst.IteratorResult.OK:
            break
        values = {name: element.get_property(name) for name in names if element.find_property(name) is not None}
        if values:
            found[element.get_name()] = {k: v if isinstance(v, (str, int, float, bool)) or v is None else str(v)
                                         for k, v in values.items()}
    return found


def message_record(message: Gst.Message, error: GLib.Error, debug) -> dict:
    return {"element": message.src.get_name() if message.src is not None else None, "path": source_path(message),
            "domain": GLib.quark_to_string(error.domain) if isinstance(error.domain, int) else str(error.domain),
            "code": error.code, "message": error.message, "debug": debug}


def finish(code: int) -> None:
    """Exits without running interpreter shutdown (GI finalizers, streaming threads); writes the
    --report file first."""
    if REPORT["path"]:
        import json
        with open(REPORT["path"], "w") as report:
            json.dump({k: v for k, v in REPORT.items() if k != "path"} | {"exit": code}, report, indent=1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def source_path(message: Gst.Message) -> str:
    return message.src.get_path_string() if message.src is not None else "(NULL)"


class Runner:
    def __init__(self, pipeline: Gst.Element, timeout: float, quiet: bool, started: float):
        self.pipeline = pipeline
        self.bus = pipeline.get_bus()
        self.timeout = timeout
        self.quiet = quiet
        self.deadline = started + timeout
        self.errors = 0
        self.warnings = 0
        self.ended_by = None
        self.signalled = False
        self.target = Gst.State.PAUSED
        self.live = False
        self.buffering = False
        self.prerolled = False

    # -- messages --------------------------------------------------------------------------

    def report_error(self, message: Gst.Message) -> None:
        error, debug = message.parse_error()
        self.errors += 1
        REPORT["errors"].append(message_record(message, error, debug))
        err(f"ERROR: from element {source_path(message)}: {error.message}")
        if debug:
            err(f"Additional debug info:\n{debug}")

    def report_warning(self, message: Gst.Message) -> None:
        warning, debug = message.parse_warning()
        self.warnings += 1
        REPORT["warnings"].append(message_record(message, warning, debug))
        if self.quiet:
            return
        out(f"WARNING: from element {source_path(message)}: {warning.message}")
        if debug:
            out(f"Additional debug info:\n{debug}")

    def record_message(self, message: Gst.Message) -> None:
        """An element or progress message, as data for tests (vtmultipasssink's passes and summary)."""
        structure = message.get_structure()
        text = message.parse_progress()[2] if message.type == Gst.MessageType.PROGRESS else None
        REPORT["messages"].append({
            "element": message.src.get_name() if message.src is not None else None,
            "kind": "progress" if message.type == Gst.MessageType.PROGRESS else "element",
            "name": structure.get_name() if structure is not None else None,
            "structure": structure.to_string() if structure is not None else None, "text": text})

    def set_state(self, state: Gst.State) -> bool:
        """Asks for `state`; on FAILURE collects the ERROR messages already posted. False then."""
        self.target = state
        result = self.pipeline.set_state(state)
        if result == Gst.StateChangeReturn.FAILURE:
            self.ended_by = "state-change-failure"
            self.drain(DRAIN_SECONDS)
            if self.errors == 0:
                err(f"ERROR: state change to {state.value_nick.upper()} failed without an error message")
            return False
        if result == Gst.StateChangeReturn.NO_PREROLL:
            # A live source: there is no preroll to wait for.
            self.live = True
        return True

    def handle(self, message: Gst.Message) -> None:
        """One bus message while running; sets self.ended_by when the run is over."""
        kind = message.type
        if kind == Gst.MessageType.ERROR:
            self.report_error(message)
            self.ended_by = "error"
        elif kind == Gst.MessageType.WARNING:
            self.report_warning(message)
        elif kind == Gst.MessageType.EOS:
            if not self.quiet:
                out(f'Got EOS from element "{message.src.get_name() if message.src else "(NULL)"}".')
            self.ended_by = "eos"
        elif kind == Gst.MessageType.ASYNC_DONE:
            # The first ASYNC_DONE ends the preroll: then PLAYING (as gst-launch does), unless a
            # buffering element still holds it back. Later ones follow seeks (vtmultipasssink's
            # passes) and change nothing.
            if message.src == self.pipeline and not self.prerolled:
                self.prerolled = True
                if self.target == Gst.State.PAUSED and not self.buffering:
                    self.set_state(Gst.State.PLAYING)
        elif kind == Gst.MessageType.BUFFERING:
            # gst-launch-1.0's rule: a non-live pipeline pauses while a buffer fills.
            if self.live:
                return
            percent = message.parse_buffering()
            if percent < 100 and not self.buffering:
                self.buffering = True
                if self.target == Gst.State.PLAYING:
                    self.pipeline.set_state(Gst.State.PAUSED)
            elif percent >= 100 and self.buffering:
                self.buffering = False
                if self.prerolled or self.target == Gst.State.PLAYING:
                    self.set_state(Gst.State.PLAYING)
        elif kind == Gst.MessageType.CLOCK_LOST:
            if self.target == Gst.State.PLAYING:
                self.pipeline.set_state(Gst.State.PAUSED)
                self.set_state(Gst.State.PLAYING)
        elif kind == Gst.MessageType.LATENCY:
            self.pipeline.recalculate_latency()
        elif kind == Gst.MessageType.REQUEST_STATE:
            self.set_state(message.parse_request_state())
        elif kind in (Gst.MessageType.ELEMENT, Gst.MessageType.PROGRESS):
            self.record_message(message)

    MASK = (Gst.MessageType.ERROR | Gst.MessageType.WARNING | Gst.MessageType.EOS | Gst.MessageType.ASYNC_DONE
            | Gst.MessageType.BUFFERING | Gst.MessageType.CLOCK_LOST | Gst.MessageType.LATENCY
            | Gst.MessageType.REQUEST_STATE | Gst.MessageType.ELEMENT | Gst.MessageType.PROGRESS)

    def drain(self, seconds: float) -> None:
        """Reads ERROR and WARNING messages for `seconds` more: they are printed and counted."""
        until = time.monotonic() + seconds
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return
            message = self.bus.timed_pop_filtered(int(left * Gst.SECOND),
                                                  Gst.MessageType.ERROR | Gst.MessageType.WARNING)
            if message is None:
                return
            if message.type == Gst.MessageType.ERROR:
                self.report_error(message)
            else:
                self.report_warning(message)

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> None:
        """PAUSED, PLAYING after the preroll, then messages until EOS, ERROR, the deadline or a signal."""
        if self.signalled:
            self.ended_by = "signal"
            return
        if not self.set_state(Gst.State.PAUSED):
            return
        if self.live and not self.set_state(Gst.State.PLAYING):
            return
        while self.ended_by is None:
            if self.signalled:
                self.ended_by = "signal"
                return
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.ended_by = "timeout"
                return
            message = self.bus.timed_pop_filtered(int(min(left, POLL_SECONDS) * Gst.SECOND), self.MASK)
            if message is not None:
                self.handle(message)
        if self.ended_by == "error":
            self.drain(DRAIN_SECONDS)

    def describe_state(self) -> str:
        result, current, pending = self.pipeline.get_state(0)
        text = f"state {current.value_nick.upper()}"
        if pending != Gst.State.VOID_PENDING:
            text += f", pending {pending.value_nick.upper()}"
        if result == Gst.StateChangeReturn.ASYNC:
            text += " (a state change still in progress)"
        return text

    def teardown(self) -> None:
        """Sets NULL on a thread; a teardown that takes more than 10 s is reported and abandoned."""
        worker = threading.Thread(target=self.pipeline.set_state, args=(Gst.State.NULL,), daemon=True)
        worker.start()
        worker.join(TEARDOWN_SECONDS)
        if worker.is_alive():
            err(f"run-pipeline: teardown hung (setting the pipeline to NULL took more than {TEARDOWN_SECONDS:.0f} s)")
            self.summary()
            finish(EXIT_TEARDOWN_HUNG)

    def summary(self) -> None:
        if not self.quiet:
            err(f"run-pipeline: {self.errors} error(s), {self.warnings} warning(s), ended by {self.ended_by}")


def typed(gtype, value):
    """A GValue of an exact type (GstClockTime fields are guint64, which a Python int is not)."""
    result = GObject.Value()
    result.init(gtype)
    result.set_value(value)
    return result


def force_key_unit_event(count: int) -> Gst.Event:
    """What gst_video_event_new_downstream_force_key_unit makes (gstvideoevent.c's field names),
    built here so that the runner needs only the Gst typelib."""
    structure = Gst.Structure.new_empty("GstForceKeyUnit")
    for field in ("timestamp", "stream-time", "running-time"):
        structure.set_value(field, typed(GObject.TYPE_UINT64, Gst.CLOCK_TIME_NONE))
    structure.set_value("all-headers", True)
    structure.set_value("count", typed(GObject.TYPE_UINT, count))
    return Gst.Event.new_custom(Gst.EventType.CUSTOM_DOWNSTREAM, structure)


def force_key_units(pipeline, frames) -> bool:
    """Sends a force-key-unit event from the element named `forcer` before each of `frames`."""
    forcer = pipeline.get_by_name("forcer")
    if forcer is None:
        err("ERROR: --force-key-units needs an element named forcer (an identity in front of the encoder).")
        return False
    seen = 0

    def before_buffer(pad, _info):
        nonlocal seen
        if seen in frames:
            pad.push_event(force_key_unit_event(seen))
        seen += 1
        return Gst.PadProbeReturn.OK

    forcer.get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, before_buffer)
    return True


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        prog="run-pipeline.py", description="Runs a gst-launch-1.0 pipeline description; never hangs.")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="give up after SECONDS (exit 124); default 60")
    parser.add_argument("--expect", choices=("error", "eos", "any"), default="any",
                        help="error: exit 0 iff the pipeline ended by an ERROR; eos: iff by EOS; any (default)")
    parser.add_argument("--quiet", action="store_true", help="print only errors (like gst-launch-1.0 -q)")
    parser.add_argument("--report", metavar="FILE.json", help="write the ending and every ERROR and WARNING as JSON")
    parser.add_argument("--report-property", action="append", default=[], metavar="NAME",
                        help="with --report: each element's property NAME when the run ends")
    parser.add_argument("--force-key-units", default="", metavar="FRAMES",
                        help="comma-separated frame numbers the element named forcer asks key units for")
    parser.add_argument("pipeline", nargs=argparse.REMAINDER, metavar="PIPELINE")
    args = parser.parse_args(argv)
    if args.pipeline and args.pipeline[0] == "--":
        args.pipeline = args.pipeline[1:]
    if not args.pipeline:
        parser.error("no pipeline description")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    try:
        args.force_key_units = {int(frame) for frame in args.force_key_units.split(",") if frame}
    except ValueError:
        parser.error(f"--force-key-units {args.force_key_units}: frame numbers separated by commas")
    return args


def main(argv) -> None:
    # A crash in an element (SIGSEGV, SIGABRT) prints every thread's Python stack before the runner
    # dies, so that a test seeing exit status -11 has more to go on than the status.
    faulthandler.enable(all_threads=True)
    started = time.monotonic()
    args = parse_arguments(argv)
    REPORT["path"] = args.report

    # The whole run until the teardown (initialisation, parsing and state changes included: an
    # element can block in one) is watched from a thread, since the main thread may be stuck in C.
    running = threading.Event()

    def watchdog():
        if not running.wait(args.timeout + 2):
            err(f"run-pipeline: timed out after {args.timeout:g} s (blocked in initialisation, "
                "parsing or a state change)")
            finish(EXIT_TIMEOUT)

    threading.Thread(target=watchdog, daemon=True).start()

    runner = None
    signalled = []

    def on_signal(number, _frame):
        signalled.append(number)
        if runner is not None:
            runner.signalled = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    Gst.init(None)
    try:
        if len(args.pipeline) == 1:
            pipeline = Gst.parse_launch(args.pipeline[0])
        else:
            # gst-launch-1.0's own joining (each argument escaped, so `location=a b` stays one value).
            pipeline = Gst.parse_launchv(args.pipeline)
    except GLib.Error as error:
        running.set()
        err(f"ERROR: pipeline could not be constructed: {error.message}.")
        finish(EXIT_PARSE)
    if pipeline is None:
        running.set()
        err("ERROR: pipeline could not be constructed.")
        finish(EXIT_PARSE)
    if not isinstance(pipeline, Gst.Pipeline):
        # A lone element (not a bin) goes into a pipeline, as gst-launch-1.0 does.
        wrapper = Gst.Pipeline.new(None)
        wrapper.add(pipeline)
        pipeline = wrapper

    if args.force_key_units and not force_key_units(pipeline, args.force_key_units):
        running.set()
        finish(EXIT_PARSE)
    runner = Runner(pipeline, args.timeout, args.quiet, started)
    runner.signalled = bool(signalled)
    runner.run()
    if runner.ended_by == "timeout":
        err(f"run-pipeline: timed out after {args.timeout:g} s ({runner.describe_state()})")
    running.set()
    if args.report_property:
        REPORT["properties"] = element_properties(pipeline, args.report_property)
    runner.teardown()
    runner.summary()
    REPORT["ended_by"] = runner.ended_by

    if runner.ended_by == "signal":
        finish(EXIT_SIGNAL)
    if runner.ended_by == "timeout":
        finish(EXIT_TIMEOUT)
    ended_by_error = runner.ended_by == "error" or (runner.ended_by == "state-change-failure" and runner.errors > 0)
    if args.expect == "error":
        if ended_by_error:
            finish(0)
        if runner.ended_by == "state-change-failure":
            err("run-pipeline: expected an ERROR, but a state change failed without one")
        else:
            err(f"run-pipeline: expected an ERROR, but the pipeline ended by {runner.ended_by}")
        finish(1)
    if args.expect == "eos":
        if runner.ended_by == "eos":
            finish(0)
        err(f"run-pipeline: expected EOS, but the pipeline ended by {runner.ended_by}")
        finish(1)
    finish(EXIT_EOS if runner.ended_by == "eos" else EXIT_ERROR)


if __name__ == "__main__":
    main(sys.argv[1:])
