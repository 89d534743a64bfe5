"""Screens of the terminal UI: runs table, one run, compare, help, finding detail."""
