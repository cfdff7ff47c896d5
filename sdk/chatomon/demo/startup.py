"""What `python -m chatomon.demo` does before serving: migrate, staff account, seed, provider.

Each step logs one clear line (or a few), so a person starting the demo sees where the data
lives, how to log in and which model answers; when the provider cannot answer, it says why
and how to fix it; the embedded model starts warming up in the background.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management import call_command

from .history import history_wanted, seed_history
from .seed import seed
from .staff import StaffAccount, ensure_staff_user
from .warmup import load_model, provider_problem, read_prompt, start_warmup, warm_request

__all__ = ["check_provider", "prepare", "read_prompt_ahead", "start_provider"]

logger = logging.getLogger("chatomon.demo")

RESET_HINT = "python -m chatomon.demo manage changepassword {username}"


def _log_account(account: StaffAccount) -> None:
    username = account.user.get_username()
    if account.generated_password is not None:
        logger.info("staff user %r created; password: %s", username, account.generated_password)
        logger.info("  (shown once; to change it: %s)", RESET_HINT.format(username=username))
    elif account.password_set:
        logger.info("staff user %r: password set from CHATOMON_DEMO_PASSWORD", username)
    else:
        logger.info(
            "staff user %r: password unchanged (reset it with %s, or set CHATOMON_DEMO_PASSWORD)",
            username,
            RESET_HINT.format(username=username),
        )


def check_provider() -> str | None:
    """Log the provider that will answer, and what is missing for chats, if anything.

    What is missing comes from chatomon's system checks (`manage.py check`): the demo logs
    their errors, with the fix each suggests, instead of refusing to start. Returns the
    first failed check's message, or None when none failed.
    """
    from django.core.checks import run_checks  # noqa: PLC0415 - needs Django set up

    from chatomon.django.settings import chat_settings  # noqa: PLC0415

    chosen = chat_settings()
    logger.info("provider: %s", chosen.provider)
    if chosen.provider.partition(":")[0] == "local":
        logger.info(
            "  the embedded model runs on this CPU, offline: answers take seconds; for "
            "faster ones set CHATOMON_PROVIDER (e.g. openai:gpt-4.1-mini with OPENAI_API_KEY)"
        )
    problem: str | None = None
    for message in run_checks(tags=["chatomon"]):
        if message.is_serious():
            problem = problem or f"[{message.id}] {message.msg}"
            logger.warning(
                "not ready, chats will fail: [%s] %s (%s)", message.id, message.msg, message.hint
            )
    return problem


def start_provider() -> str | None:
    """Check the provider can answer and start warming the embedded model.

    Returns what is wrong (also logged as a warning, with its fix), or None.
    """

    def warm_in_background(provider: Any, service: Any) -> None:
        start_warmup(provider, *warm_request(service))

    return _with_local_model(warm_in_background)


def read_prompt_ahead() -> str | None:
    """`python -m chatomon.demo warm`: read the chat's first prompt into the local model now.

    The model saves what it read in its cache folder, so the server's start-up loads it in
    a moment instead of reading it (15 to 21 s on two cores) while the first chat waits.
    Nothing to do for a vendor's provider. Returns what is wrong (also logged), or None.
    """

    def read_now(provider: Any, service: Any) -> str | None:
        logger.info("local model: reading the chat prompt once, for later starts")
        if read_prompt(provider, *warm_request(service)):
            return None
        return "the local model could not read the chat prompt (see above)"

    return _with_local_model(read_now, vendor_note="no local model to warm")


def _with_local_model(
    then: Callable[[Any, Any], str | None], *, vendor_note: str | None = None
) -> str | None:
    """Build the chat service and check its provider; a local model is loaded, then `then`.

    `then(provider, service)` returns what is wrong, or None. A vendor's provider is only
    checked (`vendor_note`, when given, is logged for it). Returns what is wrong (also
    logged as a warning), or None.
    """
    from chatomon.django.service import chat_service  # noqa: PLC0415 - needs Django set up
    from chatomon.providers.local import LocalProvider  # noqa: PLC0415

    problem: str | None
    try:
        service = chat_service()
    except Exception as error:  # noqa: BLE001 - any construction failure is the problem
        problem = f"the chat provider cannot be built: {type(error).__name__}: {error}"
    else:
        provider = service.provider
        problem = provider_problem(provider)
        if problem is None and isinstance(provider, LocalProvider):
            try:
                load_model(provider)
            except Exception as error:  # noqa: BLE001 - reported as what is wrong
                problem = f"the local model failed to load: {type(error).__name__}: {error}"
            else:
                problem = then(provider, service)
        elif problem is None and vendor_note is not None:
            logger.info("provider %s: %s", getattr(provider, "name", "?"), vendor_note)
    if problem is not None:
        logger.warning("chat is not available: %s", problem)
    return problem


def prepare() -> StaffAccount:
    """Migrate the database, create or update the staff user, seed the data set.

    The provider is `check_provider`'s and `start_provider`'s, called after this.
    """
    database = settings.DATABASES["default"]["NAME"]
    call_command("migrate", interactive=False, verbosity=0)
    logger.info("database ready: %s", database)
    account = ensure_staff_user()
    _log_account(account)
    summary = seed(owner=account.user)
    logger.info("demo data: %s", "; ".join(summary.lines()))
    if history_wanted():  # a few days of conversations for the console, on a new database
        logger.info("demo history: %s", "; ".join(seed_history(account.user).lines()))
    return account
