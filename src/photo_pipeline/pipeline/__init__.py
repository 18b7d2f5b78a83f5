"""Photo job types: each a handler turning a job's items into media calls and database
rows. Importing the package registers nothing (a command that only reads the library
must not load the decoders): ``photo_pipeline.pipeline.job_types`` does, and every
place that runs jobs (``worker``, ``serve``, ``--wait``) imports it.
"""
