"""Cell texts of a run's row that ``ls`` and the UI's runs table both print, from the row alone.

Apart from ``ls_columns`` (which imports analysis and numpy for its metric columns) so that the UI's table of stored
rows imports only this.
"""

from __future__ import annotations

from ..evidence import RunRow


def last_logged_text(row: RunRow) -> str:
    """``YYYY-MM-DD HH:MM UTC`` of ``RunRow.last_logged_at`` (the ``ls`` cell and the UI's), or '-'."""
    at = row.last_logged_at
    return f"{at[:10]} {at[11:16]} UTC" if at else "-"
