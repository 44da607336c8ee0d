"""Find and open a storage driver from a store URL, by its scheme."""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import cast

from mainsdk_memory._errors import ConfigurationError
from mainsdk_memory.drivers._protocol import Driver

__all__ = ["open_driver", "scheme_of"]

GROUP = "mainsdk_memory.drivers"


def scheme_of(url: str) -> str:
    """The driver scheme of ``url``: ``local:…`` gives ``local``, ``postgresql+psycopg:…``
    gives ``postgresql``."""
    scheme, sep, _ = url.partition(":")
    if not sep or not scheme:
        raise ConfigurationError(
            "A store URL starts with its driver scheme, for example 'local:./memories'."
        )
    return scheme.split("+", 1)[0].lower()


def open_driver(url: str) -> Driver:
    """Create the driver registered for the URL's scheme.

    Drivers register in the entry-point group ``mainsdk_memory.drivers``, by scheme name.
    ``regions:PATH`` names a residency file (:mod:`mainsdk_memory._residency`): a router over
    one store per region, the tenant of each call choosing the region.
    """
    if not isinstance(url, str):
        raise ConfigurationError("A store URL is a string, for example 'local:./memories'.")
    scheme = scheme_of(url)
    if scheme == "regions":  # a residency file: one router over a store per region
        from mainsdk_memory._residency import residency_of

        residency = residency_of(url)
        assert residency is not None  # noqa: S101 - a regions: URL always names one
        return residency.open_router()
    found = entry_points(group=GROUP).select(name=scheme)
    factory: Callable[[str], Driver] | None = None
    for entry in found:
        factory = cast(Callable[[str], Driver], entry.load())
        break
    if factory is None:
        known = sorted(ep.name for ep in entry_points(group=GROUP))
        raise ConfigurationError(
            f"No memory driver for the scheme {scheme!r}. Known schemes: {', '.join(known)}. "
            "Install the package that provides the driver."
        )
    driver = factory(url)
    if not isinstance(driver, Driver):
        raise ConfigurationError(f"The driver registered for {scheme!r} is not a Driver.")
    return driver
