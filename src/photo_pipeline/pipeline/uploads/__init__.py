"""Uploads: photos and videos sent from a phone or a browser over tus, landed as
originals in the uploads source and catalogued by a scan.

- :mod:`.settings`: where uploads land and their limits (size per file and per day,
  how long an abandoned partial is kept), from the environment;
- :mod:`.names`: device and file names as safe folder and file names;
- :mod:`.partials`: an upload's bytes on disk until it is whole, then its landing
  under its own name (hard link: a partial never appears under the final name);
- :mod:`.ledger`: the ``uploads`` rows: the day's quota, expiry, what awaits a scan;
- :mod:`.service`: ``Uploads``, what the tus routes call, and ``sweep`` (expire
  partials, queue scans for landed files not catalogued yet).

May import: ``files``, ``ingest`` (to queue scans), ``library``, ``jobs``, ``db``.
"""
