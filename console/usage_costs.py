"""Usage and cost of a turn, per model round, priced by ``CHATOMON_CONSOLE['prices']``.

A report's `steps` hold its provider rounds. Each round is priced by its model: the step's
``model`` where the report names one, else its ``name`` (the provider's class name), so
a price table keyed by provider class works for reports that name no model. A round
whose step holds its own ``usage`` (input and output tokens) gets its own tokens and
cost; the turn's cost is then their sum.

Reports that do not split usage by round (a step without ``usage``: reports written
before the engine recorded it per round) still get a turn cost when all their rounds ran
one priced model: the turn's total tokens at that model's price. Otherwise the cost is unknown, and
`TurnCost.note` says why: a page shows "—" and the reason, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .conf import ModelPrice

__all__ = ["MILLION", "RoundUsage", "TurnCost", "format_cost", "price_of", "turn_cost"]

MILLION = Decimal(1_000_000)
ROUND = "provider_round"


@dataclass(frozen=True)
class RoundUsage:
    """One model round: its model, tokens and cost (None where not known)."""

    number: int
    model: str
    input_tokens: int | None
    output_tokens: int | None
    cost: Decimal | None
    cost_text: str = "—"


@dataclass(frozen=True)
class TurnCost:
    """A turn's model rounds, its total tokens and its cost.

    Attributes:
        rounds: The model rounds, in order.
        input_tokens: The turn's input tokens (all rounds).
        output_tokens: The turn's output tokens (all rounds).
        cost: What the turn's tokens cost, or None when it cannot be priced.
        per_round: Whether the report split usage by round.
        currency: The label of the prices.
        note: Why the cost is unknown, or how it was reckoned; None when plain.
    """

    rounds: tuple[RoundUsage, ...]
    input_tokens: int
    output_tokens: int
    cost: Decimal | None
    per_round: bool
    currency: str
    note: str | None = None

    @property
    def cost_text(self) -> str:
        """The cost to read ("—" when unknown)."""
        return format_cost(self.cost, self.currency)


def price_of(price: ModelPrice, input_tokens: int, output_tokens: int) -> Decimal:
    """What `input_tokens` and `output_tokens` cost at `price` (per million tokens)."""
    return (price.input * input_tokens + price.output * output_tokens) / MILLION


def _count(value: Any) -> int | None:
    # A bool is an int to Python; in a report it is never a token count.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _round(
    number: int, step: Mapping[str, Any], prices: Mapping[str, ModelPrice], currency: str
) -> RoundUsage:
    model = str(step.get("model") or step.get("name") or "?")
    usage = step.get("usage")
    tokens: tuple[int | None, int | None] = (None, None)
    if isinstance(usage, Mapping):
        tokens = (_count(usage.get("input_tokens")), _count(usage.get("output_tokens")))
    cost = None
    if model in prices and tokens[0] is not None and tokens[1] is not None:
        cost = price_of(prices[model], tokens[0], tokens[1])
    return RoundUsage(number, model, tokens[0], tokens[1], cost, format_cost(cost, currency))


def _whole_turn_cost(
    rounds: tuple[RoundUsage, ...], tokens: tuple[int, int], prices: Mapping[str, ModelPrice]
) -> tuple[Decimal | None, str | None]:
    """The cost of the turn's total usage, when one priced model ran all its rounds."""
    models = sorted({r.model for r in rounds})
    if not models:
        if tokens == (0, 0):
            return Decimal(0), None
        return None, "the report names no model round to price"
    if len(models) > 1:
        return None, "rounds of several models, and the report does not split usage by round"
    (model,) = models
    if model not in prices:
        return None, f"no price for {model} in CHATOMON_CONSOLE['prices']"
    note = "the turn's total usage at this model's price (the report does not split it by round)"
    return price_of(prices[model], *tokens), note


def turn_cost(
    report: Mapping[str, Any],
    tokens: tuple[int, int],
    prices: Mapping[str, ModelPrice],
    currency: str,
) -> TurnCost:
    """The usage and cost of a turn: its report (a TurnReport as JSON) and total tokens."""
    steps = [s for s in report.get("steps") or () if isinstance(s, Mapping)]
    rounds = tuple(
        _round(number, step, prices, currency)
        for number, step in enumerate((s for s in steps if s.get("kind") == ROUND), start=1)
    )
    per_round = bool(rounds) and all(r.input_tokens is not None for r in rounds)
    if per_round:
        missing = sorted({r.model for r in rounds if r.cost is None})
        cost = None if missing else sum((r.cost or Decimal(0) for r in rounds), Decimal(0))
        note = (
            f"no price for {', '.join(missing)} in CHATOMON_CONSOLE['prices']" if missing else None
        )
        return TurnCost(rounds, *tokens, cost=cost, per_round=True, currency=currency, note=note)
    cost, note = _whole_turn_cost(rounds, tokens, prices)
    return TurnCost(rounds, *tokens, cost=cost, per_round=False, currency=currency, note=note)


def format_cost(cost: Decimal | None, currency: str) -> str:
    """A cost to read: "0.0042 USD", with six decimals below a hundredth; "—" when unknown."""
    if cost is None:
        return "—"
    places = Decimal("0.0001") if cost >= Decimal("0.01") or cost == 0 else Decimal("0.000001")
    return f"{cost.quantize(places)} {currency}"
