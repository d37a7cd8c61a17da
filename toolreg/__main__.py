"""`python -m toolreg`: the same as the `toolreg` command."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
