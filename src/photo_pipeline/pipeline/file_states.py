"""The states of a file row: what a scan, organize or dedupe found it to be."""

from __future__ import annotations

PRESENT, FAILED, MISSING = "present", "failed", "missing"
# Not media (a README, notes.txt, Thumbs.db): listed so a rescan skips it unchanged,
# never an asset, never a failure.
IGNORED = "ignored"
# A .xmp/.aae sidecar: no asset of its own, it travels with its photo (organize,
# dedupe). Recorded as before sidecars had a name: failed, with this error code.
SIDECAR = "sidecar"
# Moved into the quarantine by dedupe (its path is where it came from and where an
# undo puts it back); never "missing" to a scan.
QUARANTINED = "quarantined"
