"""Persistence of chat turns: conversations, messages, turns and pending confirmations.

`ConversationStore` is the protocol the chat service uses; `MemoryStore` keeps everything
in memory (notebooks, tests) and `chatomon.django.persistence.store.DjangoStore` in the
database. Both pass one shared test suite.

```python
store = MemoryStore()
conversation = await store.create_conversation(Owner.user(request.user.pk))
await store.append_messages(owner, conversation.id, [MessageItem.user("Hi")])
```
"""

from chatomon.chat.store.memory import MemoryStore
from chatomon.chat.store.protocol import ConversationStore
from chatomon.chat.store.records import (
    TIMED_OUT_REASON,
    Approver,
    ConfirmationStatus,
    Conversation,
    ConversationNotFoundError,
    ConversationSummary,
    Decision,
    MessageItem,
    MessageKind,
    NewConfirmation,
    Owner,
    PendingConfirmation,
    StoredMessage,
    StoreError,
    TurnRecord,
    TurnStatus,
    TurnTransitionError,
)
from chatomon.errors import StoreUnavailableError

__all__ = [
    "TIMED_OUT_REASON",
    "Approver",
    "ConfirmationStatus",
    "Conversation",
    "ConversationNotFoundError",
    "ConversationStore",
    "ConversationSummary",
    "Decision",
    "MemoryStore",
    "MessageItem",
    "MessageKind",
    "NewConfirmation",
    "Owner",
    "PendingConfirmation",
    "StoreError",
    "StoreUnavailableError",
    "StoredMessage",
    "TurnRecord",
    "TurnStatus",
    "TurnTransitionError",
]
