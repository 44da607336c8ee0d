"""The ``local`` driver: a folder of sealed memory files, ranked with BM25 over blind terms."""

from mainsdk_memory.drivers.local._driver import LocalDriver

__all__ = ["LocalDriver"]
