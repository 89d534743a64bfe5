"""Checkpoint metadata without torch: ``torch.save`` zip and legacy files, DCP directories, pimm's ``model/``.

Pickles are read by an allow-listing unpickler (``safe_pickle``) that builds inert placeholders and never calls
a global from the file; one budget bounds each unpickle (opcodes, objects, bytes) and zip members are inflated
with their output bounded by what they produce. Gives per checkpoint the step, epoch, W&B run id and history
cursor and the payload's shape, plus which file a resume would take. Entry: ``reader.read`` on a ``model/``
folder (the reader protocol), ``reader.read_checkpoint_file`` on one file.
"""
