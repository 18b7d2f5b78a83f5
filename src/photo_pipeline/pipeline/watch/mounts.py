"""Which folders inotify cannot watch: those on network and FUSE mounts, where a change
made by another machine (or the FUSE daemon) raises no event here. Read from the
mount table (``/proc/self/mountinfo``): the innermost mount holding the folder."""

from __future__ import annotations

import os

# Filesystem types whose changes may come from elsewhere (mountinfo's field after " - ").
NETWORK_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "ceph",
        "glusterfs",
        "afs",
        "lustre",
        "gpfs",
        "beegfs",
        "virtiofs",
        "davfs",
        "ncpfs",
        "coda",
        "fuse",
        "fuseblk",
    }
)

MOUNTINFO = "/proc/self/mountinfo"


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in octal (``\\040``)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def parse_mountinfo(text: str) -> list[tuple[str, str]]:
    """``(mount point, filesystem type)`` of each line of a mountinfo table."""
    mounts = []
    for line in text.splitlines():
        before, sep, after = line.partition(" - ")
        fields = before.split()
        if not sep or len(fields) < 5 or not after.split():
            continue
        mounts.append((_unescape(fields[4]), after.split()[0]))
    return mounts


def filesystem_of(path: str, table: str | None = None) -> str | None:
    """The filesystem type of the innermost mount holding ``path`` (None: unknown)."""
    if table is None:
        try:
            with open(MOUNTINFO) as fp:
                table = fp.read()
        except OSError:
            return None
    path = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for point, fstype in parse_mountinfo(table):
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        # A later line for the same point is the mount on top (mounted over it).
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), fstype)
    return None if best is None else best[1]


def poll_reason(path: str, table: str | None = None) -> str | None:
    """Why ``path`` must be polled, not watched: it lies on a network or FUSE mount
    (None: a local disk)."""
    fstype = filesystem_of(path, table)
    if fstype is None:
        return None
    if fstype in NETWORK_TYPES or fstype.startswith(("fuse.", "nfs")):
        return f"on a {fstype} mount, whose changes inotify does not see"
    return None
