"""``python -m nandlab.cli`` runs the CLI (as ``python -m nandlab`` does)."""

from nandlab.cli import main

main()
