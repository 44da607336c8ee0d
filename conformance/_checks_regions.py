"""Checks of declared regions: the names are well-formed (residency is the driver's word)."""

from __future__ import annotations

import re

from ._model import CheckFailed
from ._registry import CheckContext, check

__all__: list[str] = []

_REGION = re.compile(r"[a-z][a-z0-9-]{0,62}")


@check("regions")
def check_region_names(ctx: CheckContext) -> str | None:
    """Declared regions are distinct lowercase names such as 'eu' or 'us-east-1'."""
    regions = ctx.capabilities.regions
    for region in regions:
        if not isinstance(region, str) or not _REGION.fullmatch(region):
            raise CheckFailed(
                f"regions declares {region!r}, which is not a region name (lowercase letters, "
                "digits and '-', starting with a letter)"
            )
    if len(set(regions)) != len(regions):
        raise CheckFailed("regions declares the same region twice")
    return (
        "names are well-formed; where the data lives is not observable through the driver "
        "protocol, so residency itself is the driver's word"
    )
