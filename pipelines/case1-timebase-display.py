#!/usr/bin/env python3
"""Seed case 1 with a controllable timebase: an H.264 network stream (RTP over UDP on loopback)
decoded by vtdec and shown in a window at 1x, paused, resumed, at 0.5x and 2x, and jumped -- what
AVSampleBufferDisplayLayer does with a CMTimebase as its controlTimebase (WWDC14 513).

    pipelines/case1-timebase-display.py            # plays the schedule below in a window
    pipelines/case1-timebase-display.py --smoke    # the same under Xvfb if there is no display,
                                                   # measured and checked, with a screenshot

The timebase is MediaCore's `Timebase` model (Sources/MediaCore/Timebase.swift): an anchor (time,
master time) and a rate, time = anchor time + (master time - anchor master time) * rate. Its
GStreamer form is a clock the application hands to the receiving pipeline with
`gst_pipeline_use_clock`: a GstSystemClock whose calibration (`gst_clock_set_calibration`) is
the timebase's anchor and rate, with the system clock's monotonic time as the master clock. The
video sink shows each frame when the pipeline clock reaches it, so changing the calibration while
playing changes what the window shows:

    setRate(r)  -> calibration (internal now, external now, r)       time goes on at rate r
    setRate(0)  -> the clock stops: the sink waits, the window holds its frame (pause)
    setTime(t)  -> calibration (internal now, t, rate)               a jump: frames before t are
                                                                     late and dropped, then on

The sender is a pipeline of its own on the ordinary system clock: videotestsrc (a moving ball, a
running time overlay, live) -> vtenc realtime=true -> rtph264pay -> udpsink. The receiver has two
parts, as an AVSampleBufferDisplayLayer application has: the network part (udpsrc ->
rtpjitterbuffer -> rtph264depay -> h264parse-to-avcc -> vtdec -> appsink) runs on the system
clock, so the network is read at its own pace whatever the display does; each decoded frame is
enqueued into the display part (appsrc -> videoconvert -> identity sync=true -> ximagesink), which runs on the
timebase's clock with base time 0, so a frame's PTS is the timebase time at which it shows: the
PTS is the media time (the RTP time from the first frame, plus a 0.3 s display delay that absorbs
network jitter). Frames reach identity's source pad when the timebase says they are due; a probe
there records (wall time, PTS) for each frame the sink will show (not later than its
max-lateness: a jump makes the frames before the new time late, and the sink drops them), so in
smoke mode the slope of PTS over wall time in each stretch is the displayed rate, checked within
5 % of the timebase's; a pause must show no new frame and a jump must move the shown time by the
jump. A camera's stream would come in through `udpsrc` in the same way.
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import plugin_env  # noqa: E402

WIDTH, HEIGHT, FPS = 320, 240, 30
# (what, rate or jump, seconds): the display's schedule after a second at 1x to settle. The
# received stream arrives at 1x: pause and 0.5x build up a lag the queue holds, 2x and the jump
# use it up, so the display never runs ahead of what has arrived.
SCHEDULE = [
    ("play 1x", 1.0, 2.0),
    ("pause", 0.0, 1.5),
    ("resume 1x", 1.0, 1.5),
    ("play 0.5x", 0.5, 2.0),
    ("play 2x", 2.0, 1.5),
    ("jump +0.6 s, 1x", ("jump", 0.6), 1.5),
]
RATE_TOLERANCE = 0.05


class Timebase:
    """MediaCore's Timebase (the CMTimebase model) over a GstClock's calibration."""

    def __init__(self, clock):
        self.clock = clock  # the master clock: the GstClock's internal (monotonic) time
        self.anchor_time = 0
        self.anchor_master = clock.get_internal_time()
        self.rate_numerator, self.rate_denominator = 0, 1
        self._apply()

    def time(self):
        """CMTimebaseGetTime: the clock's external (calibrated) time."""
        return self.clock.get_time()

    def set_rate(self, rate):
        """CMTimebaseSetRate: re-anchored at the current time, so the timeline goes on."""
        if rate < 0:
            raise ValueError("a GstClock cannot run backwards")
        now_master = self.clock.get_internal_time()
        self.anchor_time = self.clock.adjust_unlocked(now_master)
        self.anchor_master = now_master
        self.rate_numerator, self.rate_denominator = int(round(rate * 1_000_000)), 1_000_000
        self._apply()

    def set_time(self, time_ns):
        """CMTimebaseSetTime: a jump, the rate kept."""
        self.anchor_master = self.clock.get_internal_time()
        self.anchor_time = max(0, time_ns)
        self._apply()

    def _apply(self):
        self.clock.set_calibration(self.anchor_master, self.anchor_time, self.rate_numerator, self.rate_denominator)


def start_xvfb():
    """A private X server for smoke mode when there is no display; returns the process."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "640x480x24", "-nolisten", "tcp"],
                              pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_end)
    number = b""
    while not number.endswith(b"\n"):
        chunk = os.read(read_end, 16)
        if not chunk:
            break
        number += chunk
    os.close(read_end)
    number = number.decode().strip()
    # The number comes when the server has chosen its display; wait until it takes connections.
    socket_path = f"/tmp/.X11-unix/X{number}"
    deadline = time.monotonic() + 10
    while number and time.monotonic() < deadline and server.poll() is None:
        if subprocess.run(["xdpyinfo", "-display", ":" + number], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            break
        time.sleep(0.1)
    else:
        server.kill()
        sys.exit(f"case1-timebase: Xvfb did not start (display :{number}, {socket_path}; Debian package xvfb)")
    os.environ["DISPLAY"] = ":" + number
    return server


def free_udp_port():
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_pipeline_checked(pipeline, what):
    """Sets PLAYING; a state change failure is an error naming the pipeline."""
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        message = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
        detail = message.parse_error()[0].message if message else "state change failed"
        raise RuntimeError(f"{what}: {detail}")


def take_screenshot(path):
    """The X display as a PNG (ximagesrc), and the standard deviation of its luma: a blank window
    would give ~0."""
    shot = Gst.parse_launch(
        "ximagesrc num-buffers=1 use-damage=false ! videoconvert ! tee name=t "
        f"t. ! queue ! pngenc ! filesink location={path} "
        "t. ! queue ! videoconvert ! video/x-raw,format=GRAY8 ! appsink name=gray sync=false")
    shot.set_state(Gst.State.PLAYING)
    sample = shot.get_by_name("gray").emit("try-pull-sample", 10 * Gst.SECOND)
    shot.get_bus().timed_pop_filtered(10 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    shot.set_state(Gst.State.NULL)
    if sample is None:
        return None
    ok, info = sample.get_buffer().map(Gst.MapFlags.READ)
    data = info.data
    step = max(1, len(data) // 200_000)
    values = data[::step]
    mean = sum(values) / len(values)
    deviation = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    sample.get_buffer().unmap(info)
    return deviation


def slope(points):
    """Least-squares slope of PTS (s) over wall time (s)."""
    n = len(points)
    mean_x = sum(p[0] for p in points) / n
    mean_y = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mean_x) ** 2 for p in points)
    sxy = sum((p[0] - mean_x) * (p[1] - mean_y) for p in points)
    return sxy / sxx if sxx > 0 else 0.0


def main():
    smoke = "--smoke" in sys.argv[1:]
    plugin_env.use_swiftvt_plugin()  # before Gst.init, which reads GST_PLUGIN_PATH and GST_REGISTRY
    if not smoke and not os.environ.get("DISPLAY"):
        sys.exit("case1-timebase: no X display (DISPLAY is not set); run it in a desktop session, "
                 "or with --smoke, which starts its own Xvfb")
    xvfb = start_xvfb() if smoke and not os.environ.get("DISPLAY") else None
    Gst.init(None)
    plugin_env.require_swiftvt_plugin(Gst)
    for element in ("vtdec", "vtenc", "h264parse-to-avcc", "ximagesink", "rtph264pay", "rtpjitterbuffer"):
        if Gst.ElementFactory.find(element) is None:
            sys.exit(f"case1-timebase: GStreamer element {element} not found (the swiftvt plugin, "
                     "gstreamer1.0-plugins-base/-good; scripts/install-deps.sh installs them)")
    port = free_udp_port()
    sender = Gst.parse_launch(
        "videotestsrc is-live=true pattern=ball ! "
        f"video/x-raw,width={WIDTH},height={HEIGHT},framerate={FPS}/1,format=I420 "
        "! timeoverlay font-desc=\"Sans 20\" ! vtenc realtime=true max-keyframe-interval=30 bitrate=800 "
        f"! rtph264pay config-interval=-1 pt=96 ! udpsink host=127.0.0.1 port={port} sync=false")
    network = Gst.parse_launch(
        f"udpsrc port={port} address=127.0.0.1 buffer-size=4194304 "
        "caps=\"application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96\" "
        "! rtpjitterbuffer latency=100 ! rtph264depay ! h264parse-to-avcc ! vtdec name=decoder ! videoconvert "
        f"! video/x-raw,format=I420 ! appsink name=decoded sync=false emit-signals=true max-buffers=0 drop=false")
    display = Gst.parse_launch(
        f"appsrc name=enqueue format=time is-live=false max-bytes=0 block=false "
        f"caps=\"video/x-raw,format=I420,width={WIDTH},height={HEIGHT},framerate={FPS}/1\" "
        "! videoconvert ! identity name=shown sync=true ! ximagesink name=window sync=true max-lateness=100000000")
    # The sink drops frames more than 100 ms (of timebase time) late, not 20 ms as video sinks do
    # by default: GstSystemClock sleeps the time left in real time whatever the rate, so at 2x a
    # frame is released up to one frame interval late (in timebase time) though on time on
    # average; the frames that a jump leaves behind are later than that and dropped.
    # The timebase's clock: a system clock of its own (not the shared default one), calibrated;
    # base time 0 and no start time, so the display's running time is the timebase's time.
    clock = Gst.SystemClock()
    clock.set_property("clock-type", Gst.ClockType.MONOTONIC)
    timebase = Timebase(clock)
    display.use_clock(clock)
    display.set_start_time(Gst.CLOCK_TIME_NONE)
    display.set_base_time(0)
    enqueue = display.get_by_name("enqueue")
    display_delay = int(0.3 * Gst.SECOND)
    first_pts = []

    def on_decoded(appsink):
        sample = appsink.emit("pull-sample")
        buffer = sample.get_buffer()
        if buffer.pts == Gst.CLOCK_TIME_NONE:
            return Gst.FlowReturn.OK
        if not first_pts:
            first_pts.append(buffer.pts)
        # Copy: the display holds up to seconds of frames (paused, slow), more than vtdec's
        # bounded pool lends out; holding vtdec's own buffers would stall the network part.
        frame = buffer.copy_deep()
        frame.pts = buffer.pts - first_pts[0] + display_delay
        frame.dts = Gst.CLOCK_TIME_NONE
        enqueue.emit("push-buffer", frame)
        return Gst.FlowReturn.OK

    network.get_by_name("decoded").connect("new-sample", on_decoded)
    max_lateness = display.get_by_name("window").get_property("max-lateness")
    shown = []  # (wall seconds, PTS seconds) of every frame as it is shown
    shown_lock = threading.Lock()

    def on_shown(_pad, info):
        buffer = info.get_buffer()
        if buffer.pts == Gst.CLOCK_TIME_NONE:
            return Gst.PadProbeReturn.OK
        lateness = clock.get_time() - buffer.pts
        if max_lateness < 0 or lateness <= max_lateness:
            with shown_lock:
                shown.append((time.monotonic(), buffer.pts / Gst.SECOND))
        return Gst.PadProbeReturn.OK

    display.get_by_name("shown").get_static_pad("src").add_probe(Gst.PadProbeType.BUFFER, on_shown)
    pipelines = (("display", display), ("network", network), ("sender", sender))

    def check_errors():
        for name, pipeline in pipelines:
            error = pipeline.get_bus().pop_filtered(Gst.MessageType.ERROR)
            if error:
                raise RuntimeError(f"{name}: {error.src.get_name()}: {error.parse_error()[0].message}")

    try:
        run_pipeline_checked(display, "display")
        run_pipeline_checked(network, "network")
        run_pipeline_checked(sender, "sender")
        # The timebase starts (time 0, rate 1) with the first decoded frame.
        deadline = time.monotonic() + 20
        while not first_pts and time.monotonic() < deadline:
            check_errors()
            time.sleep(0.01)
        if not first_pts:
            raise RuntimeError("no frame was decoded within 20 s")
        timebase.set_time(0)
        timebase.set_rate(1.0)
        print(f"decoding with {network.get_by_name('decoder').get_property('active-backend')}")
        time.sleep(1.0)
        stretches = []
        screenshot_deviation = None
        for what, change, seconds in SCHEDULE:
            if isinstance(change, tuple):
                rate = 1.0
                timebase.set_rate(rate)
                timebase.set_time(timebase.time() + int(change[1] * Gst.SECOND))
            else:
                rate = change
                timebase.set_rate(rate)
            start = time.monotonic()
            print(f"{what}: rate {rate}, {seconds} s", flush=True)
            if smoke and what == "play 1x":
                time.sleep(1.0)
                screenshot = os.path.join(tempfile.gettempdir(), "swiftvt-case1-timebase.png")
                screenshot_deviation = take_screenshot(screenshot)
                time.sleep(max(0, seconds - (time.monotonic() - start)))
            else:
                time.sleep(seconds)
            stretches.append((what, change, rate, start, time.monotonic()))
            check_errors()
    finally:
        for _name, pipeline in pipelines:
            pipeline.set_state(Gst.State.NULL)
        if xvfb:
            xvfb.terminate()

    if not smoke:
        return 0
    # Measured: each stretch's displayed rate (PTS over wall time), skipping its first 0.3 s (the
    # frame being waited for when the rate changed is shown on the old schedule) and its last 0.1 s.
    failures = []
    with shown_lock:
        frames = list(shown)
    print(f"{'stretch':<18} {'timebase':>8} {'frames':>6} {'shown rate':>10}  result")
    for index, (what, change, rate, start, end) in enumerate(stretches):
        inside = [p for p in frames if start + 0.3 <= p[0] <= end - 0.1]
        if rate == 0:
            # A pause: nothing new after the frame that was already due.
            new_frames = len([p for p in frames if start + 0.1 <= p[0] <= end])
            ok = new_frames == 0
            print(f"{what:<18} {rate:>8} {new_frames:>6} {'-':>10}  "
                  f"{'held (no new frame)' if ok else 'FAIL: frames shown while paused'}")
            if not ok:
                failures.append(f"{what}: {new_frames} frames shown while paused")
            continue
        if len(inside) < 5:
            failures.append(f"{what}: only {len(inside)} frames shown")
            print(f"{what:<18} {rate:>8} {len(inside):>6} {'-':>10}  FAIL: too few frames")
            continue
        measured = slope(inside)
        error = abs(measured / rate - 1)
        ok = error <= RATE_TOLERANCE
        detail = f"{(measured / rate - 1) * 100:+.1f} %"
        if isinstance(change, tuple):
            # The jump: the shown time right after it against the time just before it.
            before = [p for p in frames if p[0] < start]
            after = [p for p in frames if p[0] >= start]
            if before and after:
                moved = (after[0][1] - before[-1][1]) - (after[0][0] - before[-1][0])
                jump_ok = abs(moved - change[1]) <= 0.1
                detail += f", shown time jumped {moved:+.3f} s (asked {change[1]:+.1f} s)"
                ok = ok and jump_ok
            else:
                ok = False
                detail += ", no frames around the jump"
        print(f"{what:<18} {rate:>8} {len(inside):>6} {measured:>10.3f}  {'ok' if ok else 'FAIL'} ({detail})")
        if not ok:
            failures.append(f"{what}: shown rate {measured:.3f} for {rate} ({detail})")
    if screenshot_deviation is None or screenshot_deviation < 5:
        failures.append(f"the screenshot is blank (luma deviation {screenshot_deviation})")
    else:
        print(f"screenshot: {screenshot} (luma standard deviation {screenshot_deviation:.1f}: the "
              "window shows the video)")
    if failures:
        print("case1-timebase: FAIL: " + "; ".join(failures), file=sys.stderr)
        return 1
    print(f"case1-timebase: OK, every displayed rate within {RATE_TOLERANCE * 100:.0f} % of the timebase's")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as error:
        sys.exit(f"case1-timebase: {error}")
