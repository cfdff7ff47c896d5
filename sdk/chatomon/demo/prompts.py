"""The prompts the demo page suggests, with what each one should do.

The landing page lists them, and `tests/benchmarks/local_demo_prompts.py` asks each in
fresh conversations and judges it by its `expects`, so the page and the measurement never
drift apart. This module imports no Django, so the benchmark can read it without the demo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SUGGESTED_PROMPTS", "Expectation", "SuggestedPrompt"]

Expectation = Literal["read", "staff_approval", "client_confirmation"]
"""What a suggested prompt should do.

"read": answer with the projects the data holds; "staff_approval": wait for a staff
member's approval in the console; "client_confirmation": ask the user to confirm, or say
the data already holds the change and ask nothing.
"""


@dataclass(frozen=True)
class SuggestedPrompt:
    """One suggestion of the page.

    Attributes:
        text: What the user types.
        expects: What it should do.
        note: The page's words on what happens, shown after the prompt (may be empty).
    """

    text: str
    expects: Expectation
    note: str = ""


SUGGESTED_PROMPTS: tuple[SuggestedPrompt, ...] = (
    SuggestedPrompt("Which projects use part P-1002?", "read"),
    SuggestedPrompt(
        "Set the unit cost of part P-1001 to 14.50",
        "staff_approval",
        "waits for a staff approval in the console",
    ),
    # PRJ-102 does not use P-1002 in the seeded data (PRJ-101 does: the assistant would
    # only say so), so the first time it is asked the user confirms it.
    SuggestedPrompt(
        "Assign part P-1002 to project PRJ-102",
        "client_confirmation",
        "you confirm it here; asked again, it says the part is already there",
    ),
)
"""The page's suggestions, in the order it shows them."""
