"""Faces and people: the ``faces`` job finds faces in each asset's rendered preview
(``job``, through ``media.faces``), ``grouping`` places new faces with people (or makes
new people of unplaced faces that look alike), ``people`` is what the user decides
(names, merges, moves, "not a face"), which the grouping never undoes.

May import: jobs, media, db, pipeline.library, pipeline.curation (names, the outbox),
pipeline.xmp.regions (names read from sidecars, for the new faces).
"""
