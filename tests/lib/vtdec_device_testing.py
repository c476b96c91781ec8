"""vtdec on a software device double, as the hardware suites drive it (tests/vtdec_va/ on the
software VA driver, tests/vtdec_cuda/ on the software CUDA double): each run through the
bus-watching runner with vtdec's INFO log and the double's report file, the decoded frames' MD5
and count, and vtdec's active-backend."""
import itertools

from swiftvt_testing import PipelineRunner
from va_testing import frames_in, md5_of

VTDEC = "vtdec"   # the element's name in every pipeline, for its properties


class VtdecOnDevice:
    """`report_variable` names the double's report file variable (SWIFTVT_VA_REPORT...), read
    back by `report_class(path)` into `result.report`; `vtdec_properties` are added to vtdec in
    every decode (hardware-device=cuda...)."""

    def __init__(self, env, work, report_variable, report_class, vtdec_properties=()):
        self.env, self.work = env, work
        self.report_variable, self.report_class = report_variable, report_class
        self.vtdec_properties = list(vtdec_properties)
        self.runs = itertools.count()

    def run(self, *description, timeout=120, env=None, **variables):
        """A pipeline with the double's `variables`; the result has `.report` (the double's)."""
        number = next(self.runs)
        report = self.work / f"run{number}.report"
        env = dict(env or self.env, GST_DEBUG="vtdec:4", GST_DEBUG_NO_COLOR="1", **{self.report_variable: str(report)})
        env.update({k: str(v) for k, v in variables.items()})
        result = PipelineRunner(env, self.work)(*description, timeout=timeout, properties=("active-backend",))
        result.report = self.report_class(report)
        return result

    def decode(self, stream, hardware, timeout=300, frame_size=None, downstream="video/x-raw,format=I420",
               vtdec_properties=None, env=None, **variables):
        output = self.work / f"out{next(self.runs)}.yuv"
        properties = self.vtdec_properties if vtdec_properties is None else list(vtdec_properties)
        result = self.run("filesrc", f"location={stream}", "!", "h264parse-to-avcc", "!", "vtdec", f"name={VTDEC}",
                          f"hardware={hardware}", *properties, "!", *downstream.split(), "!", "filesink",
                          f"location={output}", timeout=timeout, env=env, **variables)
        result.md5 = md5_of(output)
        result.frames = frames_in(output, frame_size) if frame_size else None
        output.unlink(missing_ok=True)
        result.backend = result.property(VTDEC, "active-backend")
        return result
