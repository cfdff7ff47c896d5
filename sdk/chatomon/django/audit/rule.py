"""The redaction rule of a Django project, from its settings: one place builds it.

`redaction_of(settings)` is the rule of `chatomon.redaction` with the key terms of
`CHATOMON["audit"]["redact_fields"]` and the record filters of the atom's orbitals (a
`PIIGuard` hides personal data). The audit trail, the console (approvals, turn pages,
exports, its chat) and the `confirm_mutation` event of every transport use it.
"""

from __future__ import annotations

from chatomon.django.settings import ChatSettings, chat_settings
from chatomon.redaction import Redaction, record_filters

__all__ = ["current_redaction", "redaction_of"]


def redaction_of(settings: ChatSettings) -> Redaction:
    """The redaction rule `settings` describe."""
    orbitals = (*settings.atom.input, *settings.atom.output)
    return Redaction(settings.audit.redact_fields, record_filters(orbitals))


def current_redaction() -> Redaction:
    """The rule of the current settings (`chat_settings()`)."""
    return redaction_of(chat_settings())
