"""pimm-inspect: offline inspector for pimm, TensorBoard, W&B and HF Trainer runs."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load_run", "discover"]


def load_run(path):  # -> Run
    """Load one run directory into a :class:`pimm_inspect.model.Run`."""
    from .analysis import analyze
    from .load import load_run as _load_run

    return analyze(_load_run(path))


def discover(root):  # -> list[Path]
    """Find run directories under ``root`` (``root`` itself may be one)."""
    from .load import discover as _discover

    return _discover(root)
