"""Embedding the chat on other sites: signed visitor tokens, CORS and the socket origin check.

A site that embeds the widget on its own pages (another origin, so no chatomon cookie can
be relied on: browsers block third-party cookies) has its backend mint a short-lived
visitor token, and the widget sends it as a bearer token:

```python
# settings.py of the chatomon project
CHATOMON = {
    "enabled": True,
    "embed": {
        "shop": {                                   # the site id
            "key": os.environ["SHOP_EMBED_KEY"],    # 32+ characters, shared with the site
            "origins": ["https://shop.example"],    # where its pages are served from
            "user": None,                           # or (site, subject) -> a Django user
        },
    },
}

# the site's backend (any Django project with chatomon installed and the same key)
from chatomon.django.embed import sign_visitor
token = sign_visitor("shop", "customer-42", expires_in=600, key=os.environ["SHOP_EMBED_KEY"])
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

`CHATOMON["embed"]` is validated with the other settings (`EmbedSite` in
`chatomon.django.settings.embed`): a bad entry is the system check's chatomon.E002,
naming the key path, the value (never the key's) and what is allowed. The transports
apply the tokens (`chatomon.django.transports.embedding`): CORS for HTTP and SSE, the
token as a bearer token there and as a WebSocket subprotocol (`chat_websocket_application`
routes such sockets), a clear refusal for a cross-site request without one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core import signing

from chatomon.chat.pipeline.wire import error_event
from chatomon.django.settings import chat_settings
from chatomon.django.settings.embed import SITE_ID, SITE_ID_FORM, EmbedSite

__all__ = [
    "EmbedRefused",
    "EmbedSite",
    "Visitor",
    "check_token",
    "embed_sites",
    "sign_visitor",
]

SALT = "chatomon.django.embed.visitor"
MAX_EXPIRES_IN = 24 * 3600
"""The longest lifetime `sign_visitor` gives a token: it is a bearer credential."""


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


def embed_sites() -> Mapping[str, EmbedSite]:
    """The sites of `settings.CHATOMON["embed"]`, validated with the other settings (cached).

    Raises:
        ChatConfigurationError: When settings.CHATOMON is not valid (the message names the
            key path, e.g. CHATOMON['embed']['shop']['origins'], and what is allowed).
    """
    return chat_settings().embed


def sign_visitor(
    site: str,
    subject: str,
    *,
    expires_in: int = 600,
    key: str | None = None,
    now: float | None = None,
) -> str:
    """A visitor token of `site` for `subject`, valid `expires_in` seconds.

    `key` defaults to the site's key in `CHATOMON["embed"]` (a site backend that is not
    the chatomon project passes its copy of the key).

    Raises:
        ValueError: An unknown site without a key, an empty subject, or a lifetime outside
            1 second to a day.
    """
    if not SITE_ID.fullmatch(site):
        raise ValueError(f"a site id is {SITE_ID_FORM}, got {site!r}")
    if not subject:
        raise ValueError("a visitor token needs a subject (who the visitor is on the site)")
    if not 1 <= expires_in <= MAX_EXPIRES_IN:
        raise ValueError(f"expires_in must be 1 to {MAX_EXPIRES_IN} seconds, got {expires_in}")
    if key is None:
        known = embed_sites().get(site)
        if known is None:
            raise ValueError(f"no site {site!r} in CHATOMON['embed'], and no key given")
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
