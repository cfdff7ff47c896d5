"""Embedding the chat on other sites: signed visitor tokens, CORS and the socket origin check.

A site that embeds the widget on its own pages (another origin, so no chatomon cookie can
be relied on: browsers block third-party cookies) has its backend mint a short-lived
visitor token, and the widget sends it as a bearer token:

```python
# settings.py of the chatomon project
CHATOMON_EMBED = {
    "shop": {                                   # the site id
        "key": "a long random secret of this site",
        "origins": ["https://shop.example"],    # where its pages are served from
        "user": None,                           # or (site, subject) -> a Django user
    },
}

# the site's backend (any Django project with chatomon installed and the same key)
from chatomon.django.embed import sign_visitor
token = sign_visitor("shop", subject="customer-42", expires_in=600, key=SHOP_KEY)
```

```html
<chatomon-chat endpoint="https://chat.example/chat/" token="{{ token }}"></chatomon-chat>
<script src="https://chat.example/static/chatomon/chat-widget.js" type="module"></script>
```

A token is `<site>.<payload>.<signature>`: Django's `Signer` (HMAC-SHA256) with the site's
key over the subject and the expiry; a token holds no secret, only who and until when.
The server checks the site, the signature, the expiry and the request's `Origin` against
the site's `origins`, then the request runs as the visitor: the site's `user(site,
subject)` when it names a user, else an anonymous owner of its own, `visitor:<site>:<subject>`
(so one subject keeps its conversations across devices, and two sites never share one).

The transports apply them (`chatomon.django.transports.embedding`): CORS for HTTP and
SSE, the token as a bearer token there and as a WebSocket subprotocol, a clear refusal
for a cross-site request without one. `check_embed` is the system check of the setting.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings as django_settings
from django.core import signing
from django.core.checks import CheckMessage, Error
from django.core.signals import setting_changed
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chatomon.chat.pipeline.wire import error_event
from chatomon.django.settings.sections import Callback
from chatomon.errors import ChatConfigurationError

__all__ = [
    "EmbedRefused",
    "EmbedSite",
    "Visitor",
    "check_embed",
    "check_token",
    "embed_sites",
    "sign_visitor",
]

SALT = "chatomon.django.embed.visitor"
MAX_EXPIRES_IN = 24 * 3600
"""The longest lifetime `sign_visitor` gives a token: it is a bearer credential."""
_SITE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class EmbedSite(BaseModel):
    """One embedding site of `settings.CHATOMON_EMBED`."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    key: str = Field(min_length=32, description="the site's secret, at least 32 characters")
    origins: tuple[str, ...] = Field(min_length=1, description="the origins of its pages")
    user: Callback | None = Field(
        default=None, description="None, or a callable (site, subject) -> a Django user or None"
    )


@dataclass(frozen=True, slots=True)
class Visitor:
    """A checked visitor token: which site, which subject, until when (epoch seconds)."""

    site: str
    subject: str
    expires_at: int

    @property
    def identity(self) -> str:
        """The anonymous chat identity of the visitor (its conversations' owner key)."""
        return f"visitor:{self.site}:{self.subject}"


@dataclass(frozen=True, slots=True)
class EmbedRefused(Exception):  # noqa: N818 - a refusal, answered to the client
    """Why a request from an embedding page is refused: a stable code, a public message."""

    code: str
    message: str
    status: int = 401

    def event(self) -> dict[str, Any]:
        """The refusal as an `error` event."""
        return error_event(self.code, self.message)


_cache: dict[str, Mapping[str, EmbedSite]] = {}


def embed_sites() -> Mapping[str, EmbedSite]:
    """`settings.CHATOMON_EMBED` validated (cached; `setting_changed` clears it).

    Raises:
        ChatConfigurationError: A site id that is not 1-64 letters, digits, `-` or `_`,
            or a site's entry that is not valid.
    """
    known = _cache.get("sites")
    if known is not None:
        return known
    raw = getattr(django_settings, "CHATOMON_EMBED", None) or {}
    if not isinstance(raw, Mapping):
        raise ChatConfigurationError(
            f"CHATOMON_EMBED must be a mapping of site ids to sites, got {raw!r}"
        )
    sites: dict[str, EmbedSite] = {}
    for site, entry in raw.items():
        if not isinstance(site, str) or not _SITE_ID.fullmatch(site):
            raise ChatConfigurationError(
                f"CHATOMON_EMBED site id {site!r} must be 1-64 letters, digits, '-' or '_'"
            )
        try:
            sites[site] = EmbedSite.model_validate(entry)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in error.errors()
            )
            raise ChatConfigurationError(f"CHATOMON_EMBED[{site!r}]: {problems}") from error
    _cache["sites"] = sites
    return sites


def check_embed(app_configs: Any = None, **_: Any) -> list[CheckMessage]:
    """The system check of `CHATOMON_EMBED`: `chatomon.E013` for an entry that is not valid.

    Register it with `django.core.checks.register(check_embed, "chatomon")`: a bad key or
    origin list then stops `manage.py check` and the server's start, instead of failing
    the first embedded request.
    """
    try:
        embed_sites()
    except ChatConfigurationError as error:
        hint = (
            "CHATOMON_EMBED maps site ids to {'key': a secret of 32+ characters, "
            "'origins': ['https://site.example'], 'user': None or a callable (site, subject)}"
        )
        return [Error(str(error), hint=hint, id="chatomon.E013")]
    return []


def _forget(setting: str, **_: Any) -> None:
    if setting == "CHATOMON_EMBED":
        _cache.clear()


setting_changed.connect(_forget, dispatch_uid="chatomon.django.embed")


def sign_visitor(
    site: str,
    subject: str,
    *,
    expires_in: int = 600,
    key: str | None = None,
    now: float | None = None,
) -> str:
    """A visitor token of `site` for `subject`, valid `expires_in` seconds.

    `key` defaults to the site's key in `CHATOMON_EMBED` (a site backend that is not the
    chatomon project passes its copy of the key).

    Raises:
        ValueError: An unknown site without a key, an empty subject, or a lifetime outside
            1 second to a day.
    """
    if not _SITE_ID.fullmatch(site):
        raise ValueError(f"a site id is 1-64 letters, digits, '-' or '_', got {site!r}")
    if not subject:
        raise ValueError("a visitor token needs a subject (who the visitor is on the site)")
    if not 1 <= expires_in <= MAX_EXPIRES_IN:
        raise ValueError(f"expires_in must be 1 to {MAX_EXPIRES_IN} seconds, got {expires_in}")
    if key is None:
        known = embed_sites().get(site)
        if known is None:
            raise ValueError(f"no site {site!r} in CHATOMON_EMBED, and no key given")
        key = known.key
    expires_at = int((time.time() if now is None else now) + expires_in)
    signed = _signer(key).sign_object({"sub": subject, "exp": expires_at})
    return f"{site}.{signed}"


def _signer(key: str) -> signing.Signer:
    # "." separates the parts: every character of the token is then allowed in a
    # WebSocket subprotocol name (":" is not).
    return signing.Signer(key=key, sep=".", salt=SALT, algorithm="sha256")


_INVALID = EmbedRefused("embed_token_invalid", "The visitor token is not valid for this chat.")


def check_token(token: str, origin: str | None, *, now: float | None = None) -> Visitor:
    """The visitor of a token, checked: site, signature, expiry, then the page's origin.

    `origin` is the request's Origin header (None for a request that sent none, as a
    server does: the token alone is the credential then).

    Raises:
        EmbedRefused: `embed_token_invalid` (malformed, unknown site, bad signature),
            `embed_token_expired`, or `origin_not_allowed` (403).
    """
    site, _, signed = token.strip().partition(".")
    known = embed_sites().get(site)
    if known is None or not signed:
        raise _INVALID
    try:
        payload = _signer(known.key).unsign_object(signed)
    except (signing.BadSignature, ValueError, UnicodeDecodeError):
        raise _INVALID from None
    subject, expires_at = payload.get("sub"), payload.get("exp")
    if not isinstance(subject, str) or not subject or not isinstance(expires_at, int):
        raise _INVALID
    if expires_at <= (time.time() if now is None else now):
        raise EmbedRefused("embed_token_expired", "The visitor token has expired: reload the page.")
    if origin is not None and origin not in known.origins:
        raise EmbedRefused(
            "origin_not_allowed", "This site is not allowed to embed the chat.", status=403
        )
    return Visitor(site, subject, expires_at)
