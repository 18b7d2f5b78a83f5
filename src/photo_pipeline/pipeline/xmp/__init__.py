"""Curation in XMP sidecars: every curation change is written to the asset's sidecar
(``xmp_write`` jobs, journalled and undoable), and what another program changed in a
sidecar, or a photo's own rating and keywords, is read back (newer wins, per field).
The originals are never written. Fields and file handling: ``media.xmp``.

- :mod:`.sidecar_path`: which sidecar file is the asset's;
- :mod:`.fields`: the catalogue's curation as XMP;
- :mod:`.write`: the ``xmp_write`` job, and how it and its undo are queued;
- :mod:`.undo`: the ``xmp_write_undo`` job;
- :mod:`.records`: each asset's sidecar as last written or read;
- :mod:`.status`: that record for the API and the web UI;
- :mod:`.readback`: taking into the catalogue what another program changed.
"""

from photo_pipeline.pipeline.xmp.write import (
    JOB_TYPE,
    UNDO_JOB_TYPE,
    XMP_LOCK,
    NotAnXmpWrite,
    NothingToWrite,
    journal,
    request_write,
    start_undo,
    start_write,
)

__all__ = [
    "JOB_TYPE",
    "UNDO_JOB_TYPE",
    "XMP_LOCK",
    "NotAnXmpWrite",
    "NothingToWrite",
    "journal",
    "request_write",
    "start_undo",
    "start_write",
]
