"""``python -m mainsdk_memory.conformance``: the same as the ``memory-conformance`` command."""

from ._cli import main

raise SystemExit(main())
