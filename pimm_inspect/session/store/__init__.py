"""The session's persistent cache: per-file reader results and analysed rows, kept outside every run.

``disk_cache`` (entries on disk, trusted only as ``trust`` says), ``codec`` (no-pickle encoding), ``cache`` (the per-file
``ReadCache`` handed to ``load``), ``row_cache`` (``ls`` rows kept while ``load.read_record`` says the run is unchanged).
"""
