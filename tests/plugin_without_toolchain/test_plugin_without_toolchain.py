"""The release plugin must load on a machine without the Swift toolchain (was
tests/plugin-without-toolchain.sh): no Swift runtime libraries among its dependencies (the runtime
is linked in statically), and it loads with the toolchain's library directories out of reach."""
import re
import shutil
import subprocess

import pytest

from swiftvt_testing import built_plugin, require


@pytest.fixture(scope="module")
def plugin():
    path = built_plugin()
    require(path.is_file(), f"no plugin at {path} (meson compile -C build, or set SWIFTVT_PLUGIN)")
    return path


def test_no_swift_toolchain_library_among_its_dependencies(plugin):
    ldd = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, timeout=60).stdout
    found = [line.strip() for line in ldd.splitlines()
             if re.search(r"libswift|libFoundation|libdispatch|libBlocksRuntime", line)]
    assert found == [], f"{plugin} depends on Swift toolchain libraries"


@pytest.fixture(scope="module")
def inspected(plugin, tmp_path_factory):
    """gst-inspect-1.0 of a copy of the plugin with only the system library path and an empty
    environment: (exit status, output)."""
    work = tmp_path_factory.mktemp("no-toolchain")
    (work / "plugins").mkdir()
    copy = work / "plugins" / "libgstswiftvt.so"
    shutil.copy(plugin, copy)
    result = subprocess.run(["gst-inspect-1.0", str(copy)], env={"PATH": "/usr/bin:/bin", "HOME": str(work),
                                                                 "GST_REGISTRY": str(work / "registry.bin"),
                                                                 "GST_PLUGIN_PATH": str(work / "plugins")},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    return result.returncode, result.stdout


def test_loads_without_the_toolchain(inspected):
    assert inspected[0] == 0, inspected[1][-3000:]


def test_loads_with_its_elements(inspected):
    assert "h264parse-to-avcc" in inspected[1], inspected[1][-3000:]
