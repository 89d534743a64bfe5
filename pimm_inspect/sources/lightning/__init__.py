"""PyTorch Lightning's own logger files: ``CSVLogger``'s ``metrics.csv`` (``csv_metrics``).

A CSVLogger version folder (``<save_dir>/<name>/version_<N>/``) holds ``metrics.csv``, one row per
``log_metrics(metrics, step)`` call with a ``step`` column and one column per metric, and ``hparams.yaml``. There is
no clock in it, so points carry no wall time; each metric column is one series at the row's step. The folder's
``hparams.yaml`` is read by ``sources.config.hparams_yaml`` and its ``checkpoints/*.ckpt`` by
``sources.checkpoint.lightning``. A TensorBoardLogger given the same folder writes the same points to an event file:
both are read, and a tag both hold is drawn from the event file (a folder's event file may hold only some tags). Entry: ``csv_metrics.read``, which follows the reader
protocol (what could be read plus findings naming the file, never raising).
"""

from .csv_metrics import CsvMetricsResult, read

__all__ = ["CsvMetricsResult", "read"]
