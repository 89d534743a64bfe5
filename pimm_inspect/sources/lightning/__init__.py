"""PyTorch Lightning's own logger files: ``CSVLogger``'s ``metrics.csv`` (``csv_metrics``).

Its ``hparams.yaml`` is read by ``sources.config.hparams_yaml`` and its ``checkpoints/*.ckpt`` by
``sources.checkpoint.lightning``. Entry: ``csv_metrics.read``, which follows the reader protocol.
"""

from .csv_metrics import CsvMetricsResult, read

__all__ = ["CsvMetricsResult", "read"]
