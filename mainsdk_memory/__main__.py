"""``python -m mainsdk_memory``: the same as the ``memory`` command."""

from mainsdk_memory._cli import main

raise SystemExit(main())
