"""Makes GStreamer find the swiftvt plugin from a Python GI application: the Python side of
pipelines/lib/plugin-env.sh.

With SWIFTVT_PLUGIN=/path/to/libgstswiftvt.so (what `meson test` and scripts/demo.sh set), that
exact file is used, through a private plugin directory holding a symlink to it and a private
registry file: a plugin that failed to load once is blacklisted in the shared registry, and a stale
copy elsewhere on GST_PLUGIN_PATH must not be picked up instead. Without it, the installed plugin
is used.

Call use_swiftvt_plugin() before Gst.init (GStreamer reads GST_PLUGIN_PATH and GST_REGISTRY
there), then require_swiftvt_plugin(Gst) after it.

The private directory is removed at exit; one whose process was killed (no atexit then) holds a
lock nobody holds any more (owned_folder), and the next call of use_swiftvt_plugin removes it.
"""
import atexit
import os
import sys
import tempfile

from owned_folder import OwnedFolder, remove_dead

WORK_DIR_PREFIX = "swiftvt-pipeline-"


def use_swiftvt_plugin() -> None:
    plugin = os.environ.get("SWIFTVT_PLUGIN")
    if not plugin:
        return
    if not os.path.isfile(plugin):
        sys.exit(f"SWIFTVT_PLUGIN={plugin} does not exist: build the plugin first (meson compile -C build)")
    remove_dead(tempfile.gettempdir(), WORK_DIR_PREFIX)
    folder = OwnedFolder.create(tempfile.gettempdir(), WORK_DIR_PREFIX)
    atexit.register(folder.remove)
    work_dir = folder.path
    plugin_dir = os.path.join(work_dir, "plugins")
    os.mkdir(plugin_dir)
    os.symlink(os.path.realpath(plugin), os.path.join(plugin_dir, "libgstswiftvt.so"))
    os.environ["GST_PLUGIN_PATH"] = plugin_dir
    os.environ["GST_REGISTRY"] = os.path.join(work_dir, "registry.bin")


def require_swiftvt_plugin(Gst) -> None:
    """Exits with the same advice as plugin-env.sh when GStreamer cannot load the plugin."""
    if Gst.Registry.get().find_plugin("swiftvt") is None:
        sys.exit("GStreamer cannot load the swiftvt plugin.\n"
                 "Install it (meson install -C build) or set SWIFTVT_PLUGIN to libgstswiftvt.so.")
