"""Ingest: from a folder on disk to catalogue rows.

- :mod:`.imports`: ``import`` (register sources, queue scan, then render and similar);
- :mod:`.scan`: the scan job (list, hash, read metadata, record);
- :mod:`.walk`: which files of a source the scan lists;
- :mod:`.sidecars`: ``.xmp``/``.aae``/Takeout JSON read with their photo;
- :mod:`.places`: time zones and places of captures, and their backfill job.

May import: ``files``, ``library``, ``renditions``, ``near`` (to chain their jobs),
``jobs``, ``media``, ``db``.
"""
