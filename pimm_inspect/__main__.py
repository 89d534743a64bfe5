"""``python -m pimm_inspect`` runs the CLI."""

from .cli.main import main

main()
