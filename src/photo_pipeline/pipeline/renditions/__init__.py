"""Renditions: thumbnails and previews of every asset.

- :mod:`.render`: the render job (decode once, stage every size);
- :mod:`.store`: the files, content-addressed under the library home, published durably;
- :mod:`.rows`: their database rows and the queries the job and the API need.

May import: ``files``, ``library``, ``jobs``, ``media``, ``db``.
"""
