"""`python -m chatomon.evals` and the `chatomon-evals` script: run the evals, show traces.

Exit status: 0 when help was shown or every selected case passed; 1 when a case failed;
2 when the arguments are wrong (a run without `--settings` or DJANGO_SETTINGS_MODULE, an
unknown dataset, `planned_orchestration` named); 3 when Django setup, a provider, a
dataset, a trace file or the run itself raised (the message on stderr; `-v` adds the
traceback).
"""

# Django, the settings and the console load only when a run needs them.
# ruff: noqa: PLC0415
from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from chatomon.evals.cases import DATASET_NAMES, LEGACY_DATASETS, Dataset

__all__ = ["EXIT_ERROR", "EXIT_FAILED", "EXIT_PASSED", "EXIT_USAGE", "build_parser", "main"]

EXIT_PASSED = 0
"""Help was shown, or every selected case passed."""
EXIT_FAILED = 1
"""At least one selected case failed."""
EXIT_USAGE = 2
"""The arguments were wrong (argparse's own status), a run without Django settings among them."""
EXIT_ERROR = 3
"""Setup or the run raised: Django, a provider, a fixture, a dataset, the trace file."""

PLANNED = "planned_orchestration"

EPILOG = f"""\
providers: a short name (local, openai:gpt-4.1-mini, anthropic:..., ollama:..., gemini:...),
a dotted class path, or "scripted": each case plays its own scripted completions (no model;
the deterministic CI gate). Without --provider the CHATOMON provider runs.

datasets: {", ".join(LEGACY_DATASETS)} (the default: all of them).
{PLANNED} needs role-pinned planned providers and is rejected here.

exit status: 0 all passed (or help), 1 a case failed, 2 bad arguments, a selection
matching no case or no Django settings, 3 setup or the run raised.

Read a trace file back: python -m chatomon.evals show FILE
"""


def build_parser() -> argparse.ArgumentParser:
    """The run command's parser (`show FILE` has its own)."""
    parser = argparse.ArgumentParser(
        prog="python -m chatomon.evals",
        description="Run chatomon's evaluation datasets through the real chat pipeline.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--settings", help="Django settings module (overrides DJANGO_SETTINGS_MODULE).")
    add("--provider", help="Provider to evaluate (default: the CHATOMON provider).")
    add("--model", help="Model name merged into the provider configuration.")
    add("--dataset", help="Run only this packaged dataset.")
    add(
        "--dataset-file",
        action="append",
        metavar="FILE",
        help="Run a dataset YAML file of your own (repeatable).",
    )
    add("--fixture", choices=["toy", "large"], help="Run every case on this built-in fixture.")
    add("--tier", type=int, help="Run only the cases of this tier.")
    add("--tag", action="append", help="Run only cases with this tag (repeatable: all required).")
    add("--compare", help="Comma-separated providers, compared side by side.")
    add("--verbose", "-v", action="store_true", help="Show each failing case in detail.")
    add("--trace-jsonl", metavar="FILE", help="Write one JSON trace line per case to FILE.")
    add("--record", action="store_true", help="Store the run for the staff console's eval list.")
    return parser


def _show_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m chatomon.evals show", description="Print an eval trace file readably."
    )
    parser.add_argument("file", help="A JSONL file written by --trace-jsonl.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: sys.argv[1:]); returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["show"]:
        return _show(_show_parser().parse_args(arguments[1:]).file)
    parser = build_parser()
    args = parser.parse_args(arguments)
    if args.dataset is not None and args.dataset not in LEGACY_DATASETS:
        if args.dataset == PLANNED:
            parser.error(
                f"{PLANNED} needs deterministic role-pinned providers and cannot be run "
                "from this command"
            )
        parser.error(f"unknown dataset {args.dataset!r} (choose from {', '.join(DATASET_NAMES)})")
    if args.compare is not None and not args.compare.replace(",", "").strip():
        parser.error("--compare needs at least one provider name (a,b,...)")
    if args.settings:
        os.environ["DJANGO_SETTINGS_MODULE"] = args.settings
    elif not os.environ.get("DJANGO_SETTINGS_MODULE"):
        parser.error("Django settings are required: pass --settings or set DJANGO_SETTINGS_MODULE")
    try:
        return _run(args)
    except Exception as error:  # noqa: BLE001 - the documented "other nonzero" status
        print(f"chatomon-evals: error: {type(error).__name__}: {error}", file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return EXIT_ERROR


def run() -> None:
    """The `chatomon-evals` console script."""
    sys.exit(main())


def _show(path: str) -> int:
    from chatomon.evals.traces import format_traces, read_traces

    try:
        print(format_traces(read_traces(path)))
    except (OSError, ValueError) as error:
        print(f"chatomon-evals show: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_PASSED


def _service_options(settings: Any) -> dict[str, Any]:
    """The project's service options beside the provider: redaction, and planned turns.

    With `planned.enabled`, cases run as the project's turns do: planned, each role on
    its configured profile (`--provider` chooses the tool loop's provider only).
    """
    from chatomon.django.audit.rule import redaction_of
    from chatomon.django.settings import get_planned_chat_settings
    from chatomon.planned import PlannedTurns

    options: dict[str, Any] = {"redaction": redaction_of(settings)}
    planned = get_planned_chat_settings()
    if planned.enabled:
        options["planned"] = PlannedTurns.from_settings(planned)
    return options


def _run(args: argparse.Namespace) -> int:
    import django

    django.setup()
    from chatomon.django.settings import chat_settings
    from chatomon.evals.report import Progress, format_compare, format_report
    from chatomon.evals.runner import Environment, run_cases_sync
    from chatomon.evals.selection import empty_selection_message, select_cases
    from chatomon.evals.traces import TraceWriter

    settings = chat_settings()
    recorder = _recorder() if args.record else None
    environment = Environment(
        atom_config=settings.atom_config(),
        limits=settings.limits,
        system_prompt=settings.system_prompt,
        fixture=args.fixture,
        registry=settings.chat_registry,
        tools=settings.tools,
        service_options=_service_options(settings),
        # A recorded run keeps its turns in the project's database: the console opens them.
        **({"store": _django_store()} if recorder is not None else {}),
    )
    choices = _providers(args, settings.provider, dict(settings.provider_config))
    datasets = _datasets(args)
    selected = select_cases(datasets, tier=args.tier, tags=args.tag or ())
    if not selected:
        # Nothing run is not a pass: a misspelled tag would otherwise turn a CI gate green.
        why = empty_selection_message(datasets, tier=args.tier, tags=args.tag or ())
        print(f"no case matches the selection: {why}", file=sys.stderr)
        return EXIT_USAGE
    started = datetime.now(UTC)
    progress = Progress(len(selected) * len(choices))
    writer = TraceWriter(args.trace_jsonl) if args.trace_jsonl else None
    results: dict[str, list[Any]] = {}
    try:
        for choice in choices:
            on_result = _on_result(progress, writer)
            results[choice.label] = run_cases_sync(
                selected, choice, environment, on_result=on_result
            )
    finally:
        progress.finish()
        if writer is not None:
            writer.close()
    if recorder is not None:
        print(f"recorded {recorder(results, _command(args), started)}", file=sys.stderr)
    if args.compare:
        print(format_compare(results))
    else:
        prices = _prices(choices)
        print(format_report(next(iter(results.values())), verbose=args.verbose, prices=prices))
    passed = all(result.passed for rows in results.values() for result in rows)
    return EXIT_PASSED if passed else EXIT_FAILED


Recorder = Callable[[dict[str, list[Any]], str, datetime], Any]


def _recorder() -> Recorder:
    """The console's `record_run`; --record needs the console installed."""
    from django.apps import apps
    from django.utils.module_loading import import_string

    from chatomon.errors import ConfigurationError

    if not apps.is_installed("chatomon.console"):
        raise ConfigurationError("--record needs 'chatomon.console' in INSTALLED_APPS")
    # Imported by name: the console is an optional app the SDK does not depend on.
    recorder: Recorder = import_string("chatomon.console.eval_runs.record_run")
    return recorder


def _prices(choices: Sequence[Any]) -> dict[str, Any]:
    """Each provider's price from CHATOMON_CONSOLE['prices'], when the console is installed.

    A provider is priced as the console prices a turn: by its model name, else by its
    class name. Without the console, or a price, the report's cost shows "—".
    """
    from django.apps import apps
    from django.utils.module_loading import import_string

    from chatomon.evals.report import Price

    if not apps.is_installed("chatomon.console"):
        return {}
    table = import_string("chatomon.console.conf.console_settings")().prices
    prices: dict[str, Any] = {}
    for choice in choices:
        provider = choice.shared
        settings = getattr(provider, "settings", {})
        model = settings.get("model") if isinstance(settings, Mapping) else None
        found = table.get(model) or table.get(type(provider).__name__)
        if provider is not None and found is not None:
            prices[choice.label] = Price(float(found.input), float(found.output))
    return prices


def _django_store() -> Callable[[], Any]:
    from chatomon.django.persistence.store import DjangoStore

    return DjangoStore


def _providers(args: argparse.Namespace, configured: str, config: dict[str, Any]) -> list[Any]:
    """--compare over --provider over the configured provider (with its provider_config)."""
    from chatomon.evals.selection import SCRIPTED, ProviderChoice

    model = {"model": args.model} if args.model else {}
    if args.compare is not None:
        names = [name.strip() for name in args.compare.split(",") if name.strip()]
    else:
        names = [args.provider or configured]

    def choice(name: str) -> ProviderChoice:
        if name == SCRIPTED:
            return ProviderChoice.scripted()
        # The configured provider_config belongs to the configured provider only.
        base = config if name == configured else {}
        return ProviderChoice.named(name, {**base, **model})

    return [choice(name) for name in dict.fromkeys(names)]


def _datasets(args: argparse.Namespace) -> list[Dataset]:
    from chatomon.evals.cases import load_dataset, load_dataset_file

    files = [load_dataset_file(path) for path in args.dataset_file or ()]
    if args.dataset:
        return [load_dataset(args.dataset), *files]
    return files or [load_dataset(name) for name in LEGACY_DATASETS]


def _on_result(progress: Any, writer: Any) -> Callable[[Any], None]:
    def on_result(result: Any) -> None:
        if writer is not None:
            writer.write(result)
        progress.advance(result)

    return on_result


def _command(args: argparse.Namespace) -> str:
    """The run's options, as the console shows them."""
    shown = {key: value for key, value in vars(args).items() if value not in (None, False, [])}
    return " ".join(f"--{key.replace('_', '-')}={value}" for key, value in sorted(shown.items()))
