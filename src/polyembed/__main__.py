"""`python -m polyembed` runs the CLI."""

from polyembed.cli import app

app(prog_name="polyembed")
