"""The `toolreg` command: one module per subcommand, target loading in `target`."""

from .main import main

__all__ = ["main"]
