"""Near duplicates: perceptual hashes paired and grouped.

- :mod:`.similar`: the similar job and the listings of near groups;
- :mod:`.regroup`: bringing the groups up to date (incremental or full);
- :mod:`.chunks`: stored hash chunks that find candidates by index;
- :mod:`.groups`: pairing and grouping in memory (pure NumPy, no database).

May import: ``library``, ``jobs``, ``media``, ``db``.
"""
