"""Checks of capabilities the protocol has no methods for yet (relations, extraction), and of
declared regions. Vectors have protocol methods and their own checks (``_checks_vectors``)."""

from __future__ import annotations

import re

from ._model import CheckFailed
from ._registry import CheckContext, check

__all__: list[str] = []

_REGION = re.compile(r"[a-z][a-z0-9-]{0,62}")


def _unverifiable(name: str) -> CheckFailed:
    return CheckFailed(
        f"{name} is declared, but the driver protocol has no {name} methods yet, so nothing "
        f"the driver does can back the claim; declare {name}=False until the protocol has them"
    )


@check("relations")
def check_relations_declared(ctx: CheckContext) -> str | None:
    """Declaring relations needs protocol methods that do not exist yet, so it fails."""
    raise _unverifiable("relations")


@check("extraction")
def check_extraction_declared(ctx: CheckContext) -> str | None:
    """Declaring extraction needs protocol methods that do not exist yet, so it fails."""
    raise _unverifiable("extraction")


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
