"""Issue 32 row 16: the demo's multi-pass table (pipelines/demo-main.sh --smoke): multi-pass no
farther from the target and not lower in PSNR-Y than single pass (the demo checks it and exits 1
otherwise; on its former videotestsrc pattern=smpte clip it fails)."""
import subprocess

from swiftvt_testing import ROOT, require


def test_demo_multipass_is_no_worse_than_single_pass(misc_env):
    demo = subprocess.run(["bash", ROOT / "pipelines" / "demo-main.sh", "--smoke"], env=misc_env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=280)
    require(demo.returncode != 77, demo.stdout.strip().splitlines()[-1] if demo.stdout.strip() else "the demo skipped")
    assert demo.returncode == 0, f"the demo's multi-pass check (exit {demo.returncode}):\n{demo.stdout[-2000:]}"
    assert any(line.startswith("demo: multi-pass OK: ") for line in demo.stdout.splitlines()), demo.stdout[-2000:]
