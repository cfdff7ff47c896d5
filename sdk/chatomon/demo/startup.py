"""What `python -m chatomon.demo` does before serving: migrate, staff account, seed, provider.

Each step logs one clear line (or a few), so a person starting the demo sees where the data
lives, how to log in and which model answers.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.management import call_command

from .seed import seed
from .staff import StaffAccount, ensure_staff_user

__all__ = ["check_provider", "prepare"]

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


def check_provider() -> None:
    """Log the provider that will answer, and what is missing for chats, if anything.

    What is missing comes from chatomon's system checks (`manage.py check`): the demo logs
    their errors, with the fix each suggests, instead of refusing to start.
    """
    from django.core.checks import run_checks  # noqa: PLC0415 - needs Django set up

    from chatomon.django.settings import chat_settings  # noqa: PLC0415

    chosen = chat_settings()
    logger.info("provider: %s", chosen.provider)
    if chosen.provider == "local":
        logger.info(
            "  the embedded model is tiny and slow: it shows the pipeline, not good answers; "
            "for those set CHATOMON_PROVIDER (e.g. openai:gpt-4.1-mini with OPENAI_API_KEY)"
        )
    for message in run_checks(tags=["chatomon"]):
        if message.is_serious():
            logger.warning(
                "not ready, chats will fail: [%s] %s (%s)", message.id, message.msg, message.hint
            )


def prepare() -> StaffAccount:
    """Migrate the database, create or update the staff user, seed the data set."""
    database = settings.DATABASES["default"]["NAME"]
    call_command("migrate", interactive=False, verbosity=0)
    logger.info("database ready: %s", database)
    account = ensure_staff_user()
    _log_account(account)
    summary = seed(owner=account.user)
    logger.info("demo data: %s", "; ".join(summary.lines()))
    check_provider()
    return account
