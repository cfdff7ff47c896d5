"""Planned turns: multi-step grounded reads (the reference's "Planned read orchestration").

A planner splits a question into one to six read tasks (with at most one level of
dependencies and two dynamic children per root); executors gather evidence for each task
with the read tools, concurrently where tasks are independent; calculations run in exact
`Decimal`; a synthesizer writes the answer from the resolved evidence only, streamed, and
`done` reports the coverage. A plan classified as a mutation goes through the tool loop
unchanged. Every provider request is charged to the turn's round budgets.

```python
from chatomon.chat.pipeline import ChatService
from chatomon.chat.store import MemoryStore
from chatomon.chat.tools import Toolset
from chatomon.data.fixtures import toy_registry
from chatomon.planned import PlannedTurns

service = ChatService(
    store=MemoryStore(),
    provider=provider,
    toolset=Toolset(toy_registry()),
    planned=PlannedTurns.with_provider(provider),
)
```

Layout: `config` (roles, profiles, settings), `catalog` and `resolver` (which managers a
task needs), `models` and `validation` (plans), `evidence`, `calculations`, `budget`,
`routing`, `provider_calls`, `prompts`, `planner`, `scheduler`, `executor`, `read`,
`synthesis`, `events` and `stream` (wire events for custom transports), `audit`, and
`turns` (`PlannedTurns` and `PlannedNucleus`: how a turn runs one).
"""

from chatomon.planned.audit import emit_planned_audit_event, planned_audit_lineage_id
from chatomon.planned.budget import BudgetExhaustedError, RoundBudget, RoundBudgetExhausted
from chatomon.planned.calculations import (
    CalculationError,
    CalculationOperand,
    calculate,
    calculate_evidence,
)
from chatomon.planned.catalog import (
    ManagerCatalog,
    ManagerCatalogEntry,
    load_manager_catalog,
    normalize_match_text,
)
from chatomon.planned.config import (
    REQUIRED_ROLES,
    PlannedChatSettings,
    ProviderProfile,
    build_profile_provider,
    get_planned_chat_settings,
    profile_for_role,
    validate_profile_provider,
)
from chatomon.planned.events import (
    PLANNED_PUBLIC_MESSAGES,
    planned_done_event,
    planned_error_event,
    planned_tool_call_event,
    planned_tool_result_event,
)
from chatomon.planned.evidence import (
    DuplicateEvidenceError,
    EvidenceError,
    EvidenceKind,
    EvidenceLinkError,
    EvidenceNotFoundError,
    EvidenceRecord,
    EvidenceStore,
    IncompatibleEvidenceError,
    InvalidEvidenceError,
    canonical_call_identity,
)
from chatomon.planned.models import (
    CALCULATION_OPERATIONS,
    EvidenceRequirement,
    PlanIntent,
    PlannedTask,
    RequirementKind,
    RoutingFeature,
    TaskStatus,
    TerminalReason,
    ValidatedPlan,
)
from chatomon.planned.planner import InvalidPlanError, PlanningResult, plan_request
from chatomon.planned.provider_calls import (
    InvalidProviderRoundError,
    ProviderRoundResult,
    complete_provider_round,
)
from chatomon.planned.read import PlannedRead, UnresolvedPlanError
from chatomon.planned.resolver import AUDIT_MATCH_SOURCES, ManagerCandidate, ManagerResolver
from chatomon.planned.routing import ExecutorRole, select_executor_role
from chatomon.planned.scheduler import (
    PlannedCoverage,
    PlannedExecutionResult,
    PreparedPlannedTurn,
    SchedulerCallbacks,
    prepare_planned_turn,
    schedule_tasks,
)
from chatomon.planned.stream import PlannedScope, iter_planned_read_events
from chatomon.planned.synthesis import SynthesisFailedError, SynthesisResult, synthesize_answer
from chatomon.planned.turns import PlannedNucleus, PlannedTurns
from chatomon.planned.validation import (
    MAX_CHILDREN_PER_ROOT,
    MAX_ROOT_DEPENDENCY_DEPTH,
    PlanValidationError,
    validate_dynamic_children,
    validate_plan,
)

__all__ = [
    "AUDIT_MATCH_SOURCES",
    "CALCULATION_OPERATIONS",
    "MAX_CHILDREN_PER_ROOT",
    "MAX_ROOT_DEPENDENCY_DEPTH",
    "PLANNED_PUBLIC_MESSAGES",
    "REQUIRED_ROLES",
    "BudgetExhaustedError",
    "CalculationError",
    "CalculationOperand",
    "DuplicateEvidenceError",
    "EvidenceError",
    "EvidenceKind",
    "EvidenceLinkError",
    "EvidenceNotFoundError",
    "EvidenceRecord",
    "EvidenceRequirement",
    "EvidenceStore",
    "ExecutorRole",
    "IncompatibleEvidenceError",
    "InvalidEvidenceError",
    "InvalidPlanError",
    "InvalidProviderRoundError",
    "ManagerCandidate",
    "ManagerCatalog",
    "ManagerCatalogEntry",
    "ManagerResolver",
    "PlanIntent",
    "PlanValidationError",
    "PlannedChatSettings",
    "PlannedCoverage",
    "PlannedExecutionResult",
    "PlannedNucleus",
    "PlannedRead",
    "PlannedScope",
    "PlannedTask",
    "PlannedTurns",
    "PlanningResult",
    "PreparedPlannedTurn",
    "ProviderProfile",
    "ProviderRoundResult",
    "RequirementKind",
    "RoundBudget",
    "RoundBudgetExhausted",
    "RoutingFeature",
    "SchedulerCallbacks",
    "SynthesisFailedError",
    "SynthesisResult",
    "TaskStatus",
    "TerminalReason",
    "UnresolvedPlanError",
    "ValidatedPlan",
    "build_profile_provider",
    "calculate",
    "calculate_evidence",
    "canonical_call_identity",
    "complete_provider_round",
    "emit_planned_audit_event",
    "get_planned_chat_settings",
    "iter_planned_read_events",
    "load_manager_catalog",
    "normalize_match_text",
    "plan_request",
    "planned_audit_lineage_id",
    "planned_done_event",
    "planned_error_event",
    "planned_tool_call_event",
    "planned_tool_result_event",
    "prepare_planned_turn",
    "profile_for_role",
    "schedule_tasks",
    "select_executor_role",
    "synthesize_answer",
    "validate_dynamic_children",
    "validate_plan",
    "validate_profile_provider",
]
