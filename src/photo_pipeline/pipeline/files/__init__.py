"""Crash-safe file operations below a root, for every job that touches originals.

Nothing here knows organize or dedupe: they, their undos and any later job that moves,
writes or removes a user's file call this package.

- :mod:`.roots`: confinement: a path must stay inside the roots the user allowed;
- :mod:`.paths`: relative paths as database text, reversibly (non-UTF-8 names too);
- :mod:`.spots`: folders and files reached by descriptor, never through a symlink;
- :mod:`.placing`: placing a file by hard link or verified copy, durably;
- :mod:`.transfer`: one file placed and its original retired, with the last checks;
- :mod:`.lease_signals`: the signal of a broken lease, ignored process-wide;
- :mod:`.parked`: files a killed worker left parked, given their names back;
- :mod:`.fenced_journal`: a job's plan as rows, written only under its fencing token.

May import: ``db``, ``jobs``, ``media`` (hashing), ``config``; nothing else of ``pipeline``.
"""
