"""Folders that tell a live owner from a dead one, so that the next run removes what a killed one
left behind (kill -9, a crash, a lost host): the Python side of what vtmultipasssink does for its
silo and storage files (Sources/SwiftVT/MultiPassFiles.swift, StaleFiles).

Every owned folder holds OWNER_LOCK, a file its owner keeps open with flock(LOCK_EX) for as long as
it lives. The kernel drops the lock when the process dies, however it died, so "the lock can be
taken" means "no live owner", whatever became of the process id (which may have been reused).
remove_dead() removes the folders of a prefix whose lock can be taken; a folder without the lock
file is left alone (one being made, or one of an older version of this code that may still run).
"""
import fcntl
import os
import shutil
import tempfile

OWNER_LOCK = ".owner.lock"


class OwnedFolder:
    """A folder and the open, locked OWNER_LOCK inside it."""

    def __init__(self, path, lock_descriptor):
        self.path = path
        self._lock = lock_descriptor

    @classmethod
    def create(cls, parent, prefix):
        """A new folder `parent/prefixXXXXXXXX`, owned by this process. Raises OSError."""
        path = tempfile.mkdtemp(dir=parent, prefix=prefix)
        try:
            return cls(path, _lock_new(path))
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise

    @classmethod
    def claim(cls, path):
        """The folder at `path` (made if missing), owned by this process; None when a live process
        owns it. What a dead owner left in it stays: the caller decides. Raises OSError."""
        try:
            os.mkdir(path)
            made = True
        except FileExistsError:
            made = False
        try:
            lock_path = os.path.join(path, OWNER_LOCK)
            if made or not os.path.exists(lock_path):
                return cls(path, _lock_new(path))
            descriptor = _try_lock(lock_path)
            return None if descriptor is None else cls(path, descriptor)
        except BlockingIOError:  # another process is claiming it at this very moment
            return None
        except BaseException:
            if made:
                shutil.rmtree(path, ignore_errors=True)
            raise

    def owner_pid(self):
        return _read_pid(os.path.join(self.path, OWNER_LOCK))

    def release(self):
        """Keeps the folder (for the next run), gives up the lock."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def remove(self):
        """Removes the folder, then gives up the lock: while it is removed, nobody else takes it."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.release()


def _lock_new(path):
    """Creates OWNER_LOCK in `path`, already locked: made under another name, locked, then renamed,
    so that remove_dead() never finds it unlocked between its creation and the flock."""
    pending = os.path.join(path, OWNER_LOCK + ".new")
    # Read-write: on NFS, flock is emulated with POSIX locks, whose exclusive form needs it.
    descriptor = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        os.rename(pending, os.path.join(path, OWNER_LOCK))
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _try_lock(lock_path):
    """The lock file's descriptor, locked, with this process's pid written in it; None when a live
    owner holds it."""
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
    return descriptor


def _read_pid(lock_path):
    try:
        with open(lock_path) as f:
            return int(f.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def remove_dead(parent, prefix):
    """Removes the folders `parent/prefix*` whose owner died. Returns their paths."""
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(parent, name)
        if not name.startswith(prefix) or os.path.islink(path) or not os.path.isdir(path):
            continue
        try:
            descriptor = _try_lock(os.path.join(path, OWNER_LOCK))
        except OSError:
            continue
        if descriptor is None:
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            os.close(descriptor)
    return removed
