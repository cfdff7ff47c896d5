"""The console's own tables: the permission holder, escalation reviews, saved views, evals.

`ConsoleAccess` has no table (``managed = False``): it only carries the console's
permissions, so a site grants them like any other Django permission
(``chatomon_console.view_turns`` ...). `EscalationReview` stores what staff decided about
an escalated turn, so nothing escalated is silently forgotten. `SavedView` is a staff
member's named filter of a list screen: the screen and its query string. `EvalRun` and
`EvalCaseResult` hold the eval runs that `python -m chatomon.evals --record` stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.conf import settings
from django.db import models

__all__ = ["ConsoleAccess", "EscalationReview", "EvalCaseResult", "EvalRun", "SavedView"]


class ConsoleAccess(models.Model):
    """Holder of the per-area permissions of the console (no table)."""

    class Meta:
        """No table, no default add/change/delete/view permissions: only the areas."""

        managed = False
        default_permissions: ClassVar[tuple[str, ...]] = ()
        permissions: ClassVar[list[tuple[str, str]]] = [
            ("view_dashboard", "Can view the console dashboard"),
            ("use_chat", "Can chat with the assistant in the console"),
            ("view_approvals", "Can view pending and decided confirmations"),
            ("decide_confirmation", "Can approve or reject staff confirmations"),
            ("view_turns", "Can view turn reports"),
            ("review_escalation", "Can acknowledge and resolve escalated turns"),
            ("view_audit", "Can browse audit events"),
        ]


class EscalationReview(models.Model):
    """What staff recorded about one escalated turn: acknowledged, then resolved."""

    STATUS_CHOICES: ClassVar[list[tuple[str, str]]] = [
        ("acknowledged", "acknowledged"),
        ("resolved", "resolved"),
    ]

    turn: models.OneToOneField[Any, Any] = models.OneToOneField(
        "chatomon.Turn", on_delete=models.CASCADE, related_name="escalation_review"
    )
    turn_id: str
    status: models.CharField[str, str] = models.CharField(max_length=16, choices=STATUS_CHOICES)
    note: models.TextField[str, str] = models.TextField(blank=True, default="")
    reviewed_by: models.ForeignKey[Any, Any] = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    reviewed_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()

    class Meta:
        """Reviews are listed by status."""

        indexes: ClassVar[list[Any]] = [
            models.Index(fields=["status", "-reviewed_at"], name="chatomon_console_review")
        ]

    def __str__(self) -> str:
        return f"{self.turn_id} {self.status}"


class SavedView(models.Model):
    """One staff member's named filter of a list screen (its query string, cleaned)."""

    owner: models.ForeignKey[Any, Any] = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    screen: models.CharField[str, str] = models.CharField(max_length=32)
    name: models.CharField[str, str] = models.CharField(max_length=80)
    query: models.CharField[str, str] = models.CharField(max_length=2000, blank=True)
    created_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()

    class Meta:
        """A staff member's views of a screen are listed by name; a name is theirs once."""

        ordering: ClassVar[list[str]] = ["name"]
        constraints: ClassVar[list[Any]] = [
            models.UniqueConstraint(
                fields=["owner", "screen", "name"], name="chatomon_console_view_name"
            )
        ]

    def __str__(self) -> str:
        return f"{self.screen}: {self.name}"


class EvalRun(models.Model):
    """One `python -m chatomon.evals --record` run: when, how it was started, its totals."""

    started_at: models.DateTimeField[datetime, datetime] = models.DateTimeField()
    command: models.CharField[str, str] = models.CharField(max_length=2000, blank=True)
    providers: models.JSONField[Any, Any] = models.JSONField(default=list)
    total: models.PositiveIntegerField[int, int] = models.PositiveIntegerField(default=0)
    passed: models.PositiveIntegerField[int, int] = models.PositiveIntegerField(default=0)

    class Meta:
        """The newest run first."""

        ordering: ClassVar[list[str]] = ["-started_at", "-pk"]

    def __str__(self) -> str:
        return f"eval run {self.pk}: {self.passed}/{self.total}"


class EvalCaseResult(models.Model):
    """One case of a recorded run for one provider, with the ids of the turns it ran."""

    run: models.ForeignKey[Any, Any] = models.ForeignKey(
        EvalRun, on_delete=models.CASCADE, related_name="results"
    )
    run_id: int
    dataset: models.CharField[str, str] = models.CharField(max_length=200)
    case: models.CharField[str, str] = models.CharField(max_length=200)
    provider: models.CharField[str, str] = models.CharField(max_length=300)
    passed: models.BooleanField[bool, bool] = models.BooleanField()
    error: models.TextField[str, str] = models.TextField(blank=True, default="")
    verdicts: models.JSONField[Any, Any] = models.JSONField(default=list)
    turn_ids: models.JSONField[Any, Any] = models.JSONField(default=list)
    tool_calls: models.PositiveIntegerField[int, int] = models.PositiveIntegerField(default=0)
    provider_rounds: models.PositiveIntegerField[int, int] = models.PositiveIntegerField(default=0)
    input_tokens: models.PositiveIntegerField[int, int] = models.PositiveIntegerField(default=0)
    output_tokens: models.PositiveIntegerField[int, int] = models.PositiveIntegerField(default=0)
    duration_ms: models.FloatField[float, float] = models.FloatField(default=0)

    class Meta:
        """In run order."""

        ordering: ClassVar[list[str]] = ["pk"]

    def __str__(self) -> str:
        return f"{self.dataset}/{self.case} [{self.provider}]"
