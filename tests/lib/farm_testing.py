"""The farm job's test helpers (pipelines/multipass-farm.py; fixtures in tests/farm/conftest.py)."""
import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from swiftvt_testing import ROOT, SYSTEM_PYTHON, require

# SWIFTVT_FARM_JOB: another copy of the job (an older one, to see a test fail on what it fixed).
FARM_JOB = Path(os.environ.get("SWIFTVT_FARM_JOB") or ROOT / "pipelines" / "multipass-farm.py")
JOB_PYTHON = SYSTEM_PYTHON


def farm_environment(plugin_env):
    """`plugin_env` with swiftvt-farm (SWIFTVT_FARM_TOOL, default build/swiftvt-farm); requires Dask."""
    farm_tool = Path(os.environ.get("SWIFTVT_FARM_TOOL") or ROOT / "build" / "swiftvt-farm")
    require(farm_tool.is_file(), f"no swiftvt-farm at {farm_tool} (meson compile -C build, or set SWIFTVT_FARM_TOOL)")
    require(subprocess.run([JOB_PYTHON, "-c", "import distributed"], capture_output=True).returncode == 0,
            f"Dask distributed not importable by {JOB_PYTHON} (Debian package python3-distributed)")
    return dict(plugin_env, SWIFTVT_FARM_TOOL=str(farm_tool.resolve()))


@dataclasses.dataclass
class FarmRun:
    status: int
    log: str           # stdout and stderr together, in order
    output: Path

    def summary(self):
        """The job's last line about OUTPUT ("multipass-farm: OUTPUT: N frames, ...")."""
        lines = [line for line in self.log.splitlines() if line.startswith(f"multipass-farm: {self.output}:")]
        return lines[-1] if lines else ""


class Farm:
    """Runs the job with a private TMPDIR (its own, its LocalCluster workers' and their encoders'
    temporary folders go there), so that a test sees what a job leaves behind: `leftovers()`."""

    def __init__(self, env, tmp_path):
        self.tmp_path = tmp_path
        self.tmpdir = tmp_path / "tmpdir"
        self.tmpdir.mkdir()
        self.env = dict(env, TMPDIR=str(self.tmpdir))

    # Dask's own scaffolding: the folder its workers' folders go in and its two empty lock files.
    DASK_SCAFFOLDING = {"dask-worker-space", "dask-worker-space/global.lock", "dask-worker-space/purge.lock"}

    def leftovers(self):
        """What is left in the job's TMPDIR, recursively, as paths relative to it (Dask's empty
        scaffolding aside)."""
        return sorted(str(p.relative_to(self.tmpdir)) for p in self.tmpdir.rglob("*")
                      if str(p.relative_to(self.tmpdir)) not in self.DASK_SCAFFOLDING)

    def command(self, source, output, *args):
        return [JOB_PYTHON, str(FARM_JOB), str(source), str(output), *map(str, args)]

    def run(self, source, output, *args, timeout=240):
        output = Path(output)
        try:
            result = subprocess.run(self.command(source, output, *args), env=self.env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            pytest.fail(f"the farm job did not finish in {timeout} s: {(expired.output or '')[-2000:]}")
        return FarmRun(result.returncode, result.stdout, output)

    def ok(self, source, output, *args, **kwargs):
        """A run that must succeed."""
        result = self.run(source, output, *args, **kwargs)
        assert result.status == 0, f"the farm job failed ({result.status}):\n{result.log[-3000:]}"
        assert result.output.is_file(), f"no output file:\n{result.log[-2000:]}"
        return result
