"""Which folders are polled, not watched: the innermost mount's type decides."""

from __future__ import annotations

import pytest

from photo_pipeline.pipeline.watch.mounts import filesystem_of, parse_mountinfo, poll_reason

TABLE = "\n".join(
    [
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
        "30 22 0:40 / /mnt/nas rw,relatime shared:9 - nfs4 nas:/photos rw,vers=4.2",
        "31 22 0:41 / /mnt/smb\\040share rw - cifs //box/share rw",
        "32 22 0:42 / /home/me/remote rw - fuse.sshfs me@host:/ rw",
        "33 30 8:2 / /mnt/nas/local rw - ext4 /dev/sdb1 rw",
        "34 22 0:43 / /mnt/nasty rw - xfs /dev/sdc1 rw",
    ]
)


def test_the_mount_table_is_read_with_escaped_names():
    assert ("/mnt/smb share", "cifs") in parse_mountinfo(TABLE)
    assert parse_mountinfo("garbage\n\n") == []


@pytest.mark.parametrize(
    ("path", "fstype", "polled"),
    [
        ("/home/me/Pictures", "ext4", False),
        ("/mnt/nas/2024", "nfs4", True),
        ("/mnt/smb share/DCIM", "cifs", True),
        ("/home/me/remote/phone", "fuse.sshfs", True),
        ("/mnt/nas/local/card", "ext4", False),  # a local disk mounted inside the share
        ("/mnt/nasty/card", "xfs", False),  # a name that merely starts like the share's
    ],
)
def test_the_innermost_mount_decides(path, fstype, polled):
    assert filesystem_of(path, TABLE) == fstype
    reason = poll_reason(path, TABLE)
    assert (reason is not None) is polled
    if polled:
        assert fstype in reason


def test_this_machines_table_is_readable(tmp_path):
    assert filesystem_of(str(tmp_path)) is not None
