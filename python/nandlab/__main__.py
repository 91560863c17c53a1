"""``python -m nandlab`` runs the CLI."""

from nandlab.cli import main

main()
