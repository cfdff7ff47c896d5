"""The tool loop: the nucleus of a data turn.

- `rounds` — `ToolLoop`: provider rounds with the chat tools, their limits (`LoopLimits`,
  `RetryCounting`), and the hand-over of a mutation that needs a decision (`Confirmer`, or
  suspension).
- `suspension` — what a suspended loop saves with its pending confirmation (`LoopState`,
  `PendingCall`) and how a loop resumes from it once decided (`LoopResume`, `Outcome`).
"""

from chatomon.chat.loop.rounds import Confirmer, LoopLimits, RetryCounting, ToolLoop
from chatomon.chat.loop.suspension import LoopResume, LoopState, Outcome, PendingCall

__all__ = [
    "Confirmer",
    "LoopLimits",
    "LoopResume",
    "LoopState",
    "Outcome",
    "PendingCall",
    "RetryCounting",
    "ToolLoop",
]
