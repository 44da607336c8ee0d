"""``python -m mainsdk_memory.checks``: the same as the ``memory-check`` command."""

from mainsdk_memory.checks._cli import main

raise SystemExit(main())
