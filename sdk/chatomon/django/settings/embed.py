"""The `embed` key of settings.CHATOMON: the sites whose pages embed the chat widget.

```python
CHATOMON = {
    "embed": {
        "shop": {"key": "<32+ characters>", "origins": ["https://shop.example"], "user": None},
    },
}
```

Each site id maps to an `EmbedSite`; `chatomon.django.embed` signs and checks the visitor
tokens. A site's key never appears in an error message.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic.dataclasses import dataclass

from chatomon._validation import Secret, invalid
from chatomon.django.settings.sections import SECTION, Callback, frozen

__all__ = ["EMBED_FORM", "SITE_ID", "SITE_ID_FORM", "EmbedSite", "EmbedSites"]


SITE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A site id of `embed`: it starts every visitor token, before the first "." ."""
SITE_ID_FORM = "1-64 letters, digits, '-' or '_'"


def _origin(value: str) -> str:
    # The socket and CORS checks compare the Origin header as a string: a path, a
    # trailing slash or a missing scheme would never match, so it is refused here.
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.netloc
        or parts.path
        or parts.query
        or parts.fragment
        or value != value.strip()
    ):
        raise invalid(
            f"must be an origin such as 'https://shop.example' (scheme, host and port only), "
            f"got {value!r}"
        )
    return value


Origin = Annotated[str, Field(strict=True), AfterValidator(_origin)]


def _site_user(user: Callable[..., Any]) -> Callable[..., Any]:
    # Called on a visitor's first request: a callable that cannot take (site, subject)
    # would fail there, so its signature is read now (when it has one to read).
    try:
        signature = inspect.signature(user)
    except (TypeError, ValueError):
        return user
    try:
        signature.bind("site", "subject")
    except TypeError:
        raise invalid(
            f"names {getattr(user, '__qualname__', user)!r}, which cannot be called with the "
            "two arguments (site, subject)"
        ) from None
    return user


@dataclass(frozen=True, config=SECTION)
class EmbedSite:
    """One site of `embed`: a site whose pages embed the chat with visitor tokens.

    Attributes:
        key: The site's secret (32+ characters), shared with its backend, which signs the
            visitor tokens (`chatomon.django.embed.sign_visitor`). Never shown in errors.
        origins: The origins its pages are served from ("https://shop.example").
        user: None (every visitor is an anonymous owner of its own, `visitor:<site>:<subject>`),
            or a callable `(site, subject)` returning the Django user the visitor is, or None.
    """

    key: Annotated[str, Secret()] = Field(
        strict=True, min_length=32, description="a secret of at least 32 characters"
    )
    origins: tuple[Origin, ...] = Field(
        min_length=1, description="a list of at least one origin such as 'https://shop.example'"
    )
    user: Annotated[Callback, AfterValidator(_site_user)] | None = Field(
        default=None,
        description="None, a callable or a dotted path to a callable receiving (site, subject)",
    )


SITE_FORM = (
    "{'key': a secret of 32+ characters, 'origins': a list of origins, "
    "'user': None or a callable (site, subject)}"
)
EMBED_FORM = f"a mapping of site ids to sites {SITE_FORM}"
"""What `embed` accepts, in the words of its error messages."""


def _sites(value: Any) -> Any:
    # Checked here, not by the mapping's own validation, whose messages would show the
    # value given, and with it a site's key (a list of sites, a site as a tuple).
    if not isinstance(value, Mapping):
        raise invalid(
            f"must be {EMBED_FORM}, got {_kind(value)}",
            value=_kind(value),
            show_value=True,
        )
    for site in value:  # every id first: a site id is the token's first part, before "."
        if not isinstance(site, str) or not SITE_ID.fullmatch(site):
            raise invalid(
                f"has the site id {site!r}: a site id is {SITE_ID_FORM}",
                value=site,
                allowed=(f"site ids of {SITE_ID_FORM}",),
                show_value=True,
            )
    for site, entry in value.items():
        if not isinstance(entry, Mapping | EmbedSite):
            raise invalid(
                f"must be a mapping {SITE_FORM}, got {_kind(entry)}",
                at=(site,),
                value=_kind(entry),
                allowed=(SITE_FORM,),
                show_value=True,
            )
    return value


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


EmbedSites = Annotated[Mapping[str, EmbedSite], BeforeValidator(_sites), AfterValidator(frozen)]
"""`embed`: site ids mapped to their `EmbedSite` (read-only)."""
