"""Widgets of the terminal UI, grouped by the screen area they fill."""
