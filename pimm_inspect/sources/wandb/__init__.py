"""Local W&B run folders (``wandb/run-*``, ``wandb/offline-run-*``), read without importing wandb.

Frames the ``.wandb`` transaction log (LevelDB log blocks) in bulk and decodes history and summary records with
numpy over the protobuf wire format, every other record by the ``Record`` class built from wandb's descriptors
(``_proto``); damaged blocks are skipped with a finding. Gives history series (step metrics honoured), config,
summary, console lines, the run's mode and server link facts (``links``). A refresh resumes at the last record
of a log that has no exit record yet. Entry: ``reader.read`` (the reader protocol) or ``reader.read_wandb_run``.
"""
