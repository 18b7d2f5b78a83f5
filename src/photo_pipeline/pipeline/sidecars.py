"""A catalogued file's XMP sidecar, found beside it and read within the library's roots.

The sidecar's capture time and position replace the file's own (``media.sidecar``)
when the scan reads the file. Like every fact of an asset, they are taken when its
content is first catalogued: a sidecar added or edited later changes nothing
(``timeshift`` changes dates). A sidecar that cannot be read, or whose real path leaves
the roots (a symlink), is passed over with a warning: the file is catalogued from what
it holds itself.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Sequence

from photo_pipeline.media import MediaError, MediaMetadata
from photo_pipeline.media.sidecar import (
    MAX_SIDECAR_BYTES,
    read_sidecar,
    sidecar_names,
    with_sidecar,
)
from photo_pipeline.pipeline import roots

log = logging.getLogger(__name__)


def with_sidecar_of(
    path: str, metadata: MediaMetadata, allowed: Sequence[str], time_limit: float
) -> MediaMetadata:
    """``metadata`` of the file at ``path`` with what its sidecar says, if it has one."""
    folder, name = os.path.split(path)
    for candidate in sidecar_names(name):
        sidecar = os.path.join(folder, candidate)
        if not os.path.lexists(sidecar):
            continue
        try:
            with roots.pinned(sidecar, allowed) as opened:
                if not stat.S_ISREG(opened.stat.st_mode):
                    raise MediaError("unsupported_format", "not a regular file")
                if opened.stat.st_size > MAX_SIDECAR_BYTES:
                    raise MediaError("too_large", f"{opened.stat.st_size} bytes")
                facts = read_sidecar(opened.path, time_limit)
        except (roots.PathOutsideRoots, MediaError) as exc:
            log.warning("%s: sidecar not read (%s)", sidecar, exc)
            return metadata
        return metadata if not facts else with_sidecar(metadata, facts)
    return metadata
