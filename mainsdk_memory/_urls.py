"""Where the project and its documentation live on the web: every link the SDK prints is built here.

Links are absolute, so an error message or a memory-check diagnostic read by someone who
installed the wheel (and has no ``docs/`` folder) still leads to the page. The errors page is
also shipped inside the package for ``memory explain CODE`` (:mod:`mainsdk_memory._cli_explain`).
"""

from __future__ import annotations

__all__ = ["DOCS_URL", "HOME", "docs_url"]

#: The project's home (pyproject.toml's ``[project.urls]`` say the same).
HOME = "https://github.com/mainsdk/mainsdk-memory"
#: The ``docs/`` folder of the main branch, as published.
DOCS_URL = f"{HOME}/blob/main/docs/"


def docs_url(page: str, anchor: str | None = None) -> str:
    """The published URL of ``docs/<page>``, with ``#anchor`` when given."""
    return f"{DOCS_URL}{page}" + (f"#{anchor}" if anchor else "")
