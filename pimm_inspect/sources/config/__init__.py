"""Provenance and config documents: ``run_metadata.json``, ``resolved_config.json``, ``model_config.json``,
``config.py``, ``eval/*/test_metrics.json`` and Lightning's ``hparams.yaml``.

JSON is parsed with bounds on value count, size and depth; YAML with a safe loader; ``config.py`` is kept as
text and never executed. Each gives a ``ConfigDoc`` (or provenance / eval metrics) plus findings naming the file.
Entry: ``json_docs`` and ``hparams_yaml``, whose ``read_*`` functions follow the reader protocol.
"""
