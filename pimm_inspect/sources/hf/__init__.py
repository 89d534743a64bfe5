"""Hugging Face Trainer output directories: ``trainer_state.json``, ``checkpoint-N/``, ``runs/`` event files.

Parses ``log_history`` into series (salvaging what a damaged state file still holds), the model ``config.json``
and ``training_args.bin`` (through the safe unpickler), safetensors headers (no weights read), and works out
attempts from the TensorBoard folders a resumed Trainer leaves; ``notes`` explains its logging, eval and save
schedules in plain words. Entry: ``reader.read`` on the run directory (the reader protocol).
"""
