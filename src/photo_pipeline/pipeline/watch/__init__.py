"""Watched sources: a watcher per watched source catalogues what arrives in it.

- :mod:`.leases`: exactly one watcher per source across processes and hosts (a lease
  row on the database's clock, renewed by heartbeat, taken over when its holder dies);
- :mod:`.mounts`: whether a folder lies on a network or FUSE mount (polled, not watched);
- :mod:`.writers`: whether a process holds a file open for writing (``/proc``);
- :mod:`.settling`: changed paths waiting until their files have settled;
- :mod:`.batches`: settled paths handed to scans of exactly those paths;
- :mod:`.watcher`: one source's watcher (inotify through ``watchfiles``, or a cheap
  periodic rescan), its first pass, and its lease;
- :mod:`.service`: the watchers of a process (``serve``, ``watch``): which sources it
  holds, taken and given up as leases and the sources' watch flags change.

Nothing is lost when a watcher dies: what it handed over is a durable scan job, and
what it had not yet is found by the next watcher's first pass, a cheap rescan.

May import: ``ingest``, ``library``, ``files``, ``jobs``, ``db``.
"""
