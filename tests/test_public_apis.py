"""chatomon reaches Django, asgiref and Channels through their public APIs only.

DESIGN.md §5 (issue 17): code that writes a library's internals breaks, for every user at
once, on a minor release of that library. This test reads every module under `sdk/` and
`console/` (their syntax trees: nothing is imported) and reports each place that

- imports a name or a module with a leading underscore from one of the libraries
  (`from django.x import _y`, `import django.x._y`);
- imports a `django.*` module that Django's documentation does not present as API
  (`django.db.backends.utils`, `django.core.handlers.asgi`, ...), or a name of a module
  whose documentation presents only some of its names;
- reaches a leading-underscore attribute of something bound to a library: a module, a
  class or object imported from it, a value derived from one (`caches["default"]._cache`,
  `connections.all()[0]._x`), a parameter annotated with a library type, a subclass of a
  library class (`getattr(x, "_y")` counts too);
- reaches an attribute that has no underscore but is still internal (a deny-list:
  asgiref's executor bookkeeping, Django's connection lifecycle flags).

Exceptions that Django documents as public despite their underscore (`Model._meta`, ...)
are in `DOCUMENTED_UNDERSCORE_NAMES`, each with the documentation that makes it public.
"""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = {"sdk/chatomon": "chatomon", "console": "chatomon.console"}
LIBRARIES = ("django", "asgiref", "channels")

# Django's documented modules (docs.djangoproject.com: the module index, and the import
# lines of the reference and topic guides). A module maps to None when its public names
# are all API, or to the names the documentation presents when it shows only some.
DJANGO_PUBLIC_MODULES: dict[str, frozenset[str] | None] = dict.fromkeys(
    (
        "django",
        "django.apps",
        "django.conf",
        "django.conf.urls",
        "django.conf.urls.i18n",
        "django.conf.urls.static",
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.auth.admin",
        "django.contrib.auth.backends",
        "django.contrib.auth.base_user",
        "django.contrib.auth.context_processors",
        "django.contrib.auth.decorators",
        "django.contrib.auth.forms",
        "django.contrib.auth.hashers",
        "django.contrib.auth.middleware",
        "django.contrib.auth.mixins",
        "django.contrib.auth.models",
        "django.contrib.auth.password_validation",
        "django.contrib.auth.signals",
        "django.contrib.auth.validators",
        "django.contrib.auth.views",
        "django.contrib.contenttypes",
        "django.contrib.contenttypes.fields",
        "django.contrib.contenttypes.models",
        "django.contrib.humanize",
        "django.contrib.messages",
        "django.contrib.messages.context_processors",
        "django.contrib.messages.middleware",
        "django.contrib.postgres",
        "django.contrib.postgres.aggregates",
        "django.contrib.postgres.constraints",
        "django.contrib.postgres.expressions",
        "django.contrib.postgres.fields",
        "django.contrib.postgres.functions",
        "django.contrib.postgres.indexes",
        "django.contrib.postgres.lookups",
        "django.contrib.postgres.operations",
        "django.contrib.postgres.search",
        "django.contrib.postgres.validators",
        "django.contrib.sessions",
        "django.contrib.sessions.backends.base",
        "django.contrib.sessions.middleware",
        "django.contrib.sessions.models",
        "django.contrib.sites",
        "django.contrib.sites.models",
        "django.contrib.sites.shortcuts",
        "django.contrib.staticfiles",
        "django.contrib.staticfiles.finders",
        "django.contrib.staticfiles.storage",
        "django.contrib.staticfiles.testing",
        "django.contrib.staticfiles.urls",
        "django.contrib.staticfiles.views",
        "django.core.asgi",
        "django.core.cache",
        "django.core.cache.backends.base",
        "django.core.cache.utils",
        "django.core.checks",
        "django.core.exceptions",
        "django.core.files",
        "django.core.files.base",
        "django.core.files.storage",
        "django.core.files.uploadedfile",
        "django.core.mail",
        "django.core.management",
        "django.core.management.base",
        "django.core.paginator",
        "django.core.serializers",
        "django.core.serializers.json",
        "django.core.signals",
        "django.core.signing",
        "django.core.validators",
        "django.core.wsgi",
        "django.db",
        "django.db.backends.signals",
        "django.db.migrations",
        "django.db.migrations.operations",
        "django.db.models",
        "django.db.models.constraints",
        "django.db.models.fields",
        "django.db.models.fields.json",
        "django.db.models.fields.related",
        "django.db.models.functions",
        "django.db.models.indexes",
        "django.db.models.lookups",
        "django.db.models.signals",
        "django.db.transaction",
        "django.dispatch",
        "django.forms",
        "django.forms.fields",
        "django.forms.formsets",
        "django.forms.models",
        "django.forms.renderers",
        "django.forms.widgets",
        "django.http",
        "django.middleware.cache",
        "django.middleware.clickjacking",
        "django.middleware.common",
        "django.middleware.csrf",
        "django.middleware.gzip",
        "django.middleware.http",
        "django.middleware.locale",
        "django.middleware.security",
        "django.shortcuts",
        "django.template",
        "django.template.backends.django",
        "django.template.backends.jinja2",
        "django.template.context_processors",
        "django.template.defaultfilters",
        "django.template.loader",
        "django.template.response",
        "django.templatetags.static",
        "django.test",
        "django.test.runner",
        "django.test.signals",
        "django.test.utils",
        "django.urls",
        "django.utils",
        "django.utils.cache",
        "django.utils.dateparse",
        "django.utils.decorators",
        "django.utils.deprecation",
        "django.utils.encoding",
        "django.utils.feedgenerator",
        "django.utils.functional",
        "django.utils.html",
        "django.utils.http",
        "django.utils.log",
        "django.utils.module_loading",
        "django.utils.safestring",
        "django.utils.text",
        "django.utils.timezone",
        "django.utils.translation",
        "django.views",
        "django.views.decorators.cache",
        "django.views.decorators.common",
        "django.views.decorators.csrf",
        "django.views.decorators.debug",
        "django.views.decorators.gzip",
        "django.views.decorators.http",
        "django.views.decorators.vary",
        "django.views.defaults",
        "django.views.generic",
        "django.views.generic.base",
        "django.views.generic.dates",
        "django.views.generic.detail",
        "django.views.generic.edit",
        "django.views.generic.list",
        "django.views.i18n",
        "django.views.static",
    ),
    None,
) | {
    # "Query expressions" documents `from django.db.models.expressions import RawSQL`;
    # the module's other names (Col, Combinable, ...) are the ORM's own machinery.
    "django.db.models.expressions": frozenset({"RawSQL"}),
    # makemigrations writes `django.db.models.deletion.CASCADE` (and PROTECT, ...) into
    # every migration with a foreign key; the same objects are documented on
    # django.db.models.
    "django.db.models.deletion": frozenset(
        {"CASCADE", "PROTECT", "RESTRICT", "SET", "SET_DEFAULT", "SET_NULL", "DO_NOTHING"}
    ),
    # The cache documentation names each built-in backend class by its dotted path (the
    # BACKEND setting); naming the class (isinstance) is public, the backends' attributes
    # are not (they start with an underscore).
    **{
        f"django.core.cache.backends.{module}": frozenset({backend})
        for module, backend in (
            ("db", "DatabaseCache"),
            ("dummy", "DummyCache"),
            ("filebased", "FileBasedCache"),
            ("locmem", "LocMemCache"),
            ("memcached", "PyMemcacheCache"),
            ("redis", "RedisCache"),
        )
    },
}

# The better public road for the undocumented modules chatomon has been seen to reach.
MODULE_HINTS = {
    "django.http.response": "import the response classes from django.http",
    "django.core.handlers.asgi": (
        "run under Django's own handler from django.core.asgi.get_asgi_application; "
        "get_script_prefix is django.urls.get_script_prefix"
    ),
    "django.db.backends.utils": "use the cursor that connection.cursor() returns, untyped",
    "django.db.backends.base.base": "use django.db.connection / connections[alias]",
    "django.contrib.staticfiles.handlers": (
        "serve static files with django.contrib.staticfiles.urls.staticfiles_urlpatterns() "
        "(DEBUG) or a documented deployment (collectstatic)"
    ),
}

# Underscore names that Django documents as public API.
DOCUMENTED_UNDERSCORE_NAMES = {
    # "Model _meta API" (ref/models/meta): Model._meta is the documented Options API.
    "_meta": "django",
    # "Managers" (topics/db/managers): Model._default_manager and _base_manager are
    # documented for code that does not know a model's manager names.
    "_default_manager": "django",
    "_base_manager": "django",
    # "Model instance reference" (ref/models/instances): Model._state, its ModelState with
    # `adding` and `db`, is documented.
    "_state": "django",
}

# Internals without an underscore: not in the libraries' documentation, and set or read
# by code that forks the library's own behaviour. Keyed by name, with the library whose
# objects carry it and what to do instead.
ASGIREF_HINT = (
    "asgiref's thread and loop bookkeeping: call sync_to_async / async_to_sync "
    "(thread_sensitive=, executor=) or use ThreadSensitiveContext"
)
CONNECTION_HINT = (
    "a database connection's internal state: use close_old_connections(), "
    "connection.close(), CONN_MAX_AGE and CONN_HEALTH_CHECKS, transaction.atomic"
)
INTERNAL_NAMES: dict[str, tuple[str, str]] = (
    dict.fromkeys(
        (
            "single_thread_executor",
            "threadlocal",
            "executors",
            "loop_thread_executors",
            "context_to_thread_executor",
            "thread_sensitive_context",
            "async_single_thread_context",
            "deadlock_context",
            "main_event_loop",
            "main_event_loop_pid",
            "launch_map",
        ),
        ("asgiref", ASGIREF_HINT),
    )
    | dict.fromkeys(
        (
            "errors_occurred",
            "close_if_unusable_or_obsolete",
            "is_usable",
            "in_atomic_block",
            "needs_rollback",
            "atomic_blocks",
            "savepoint_ids",
            "commit_on_exit",
            "closed_in_transaction",
            "run_on_commit",
            "close_at",
            "health_check_done",
            "health_check_enabled",
            "ensure_connection",
            "get_new_connection",
            "init_connection_state",
            "create_cursor",
            "inc_thread_sharing",
            "dec_thread_sharing",
            "validate_thread_sharing",
            "allow_thread_sharing",
        ),
        ("django", CONNECTION_HINT),
    )
    | dict.fromkeys(
        ("channel_receive", "base_send"),
        (
            "channels",
            "what AsyncConsumer.__call__ sets up and awaits for itself: read the layer with its "
            "documented API (get_channel_layer, new_channel, receive, group_add) and send with "
            "send()",
        ),
    )
)


@dataclass(frozen=True, order=True)
class Offence:
    """One use of a private name: where it is, what it reaches, and what to do instead."""

    path: str
    line: int
    reaches: str
    hint: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reaches} -- {self.hint}"


# -- what is a module, and what is public ------------------------------------------------


@cache
def library_root(library: str) -> Path | None:
    """The folder of an installed library (found without importing it)."""
    spec = importlib.util.find_spec(library)
    if spec is None or spec.submodule_search_locations is None:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@cache
def is_module(dotted: str) -> bool:
    """Whether a dotted path names a module of a library, by its files: no import."""
    library, *parts = dotted.split(".")
    root = library_root(library)
    if root is None or any(not part.isidentifier() for part in parts):
        return False
    folder = root.joinpath(*parts)
    return (folder / "__init__.py").is_file() or folder.with_suffix(".py").is_file()


def library_of(dotted: str) -> str | None:
    """The library a dotted path belongs to, if it is one of the three."""
    head = dotted.split(".", 1)[0]
    return head if head in LIBRARIES else None


def private_segment(dotted: str) -> str | None:
    """The first leading-underscore segment of a dotted path (dunders are Python's)."""
    for part in dotted.split("."):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return part
    return None


def module_offence(module: str) -> str | None:
    """Why importing a whole library module is not public, or None when it is."""
    if (segment := private_segment(module)) is not None:
        return f"{segment!r} is private to {library_of(module)}"
    if library_of(module) == "django" and module not in DJANGO_PUBLIC_MODULES:
        hint = MODULE_HINTS.get(module, "import it from a module Django documents")
        return f"{module} is not a documented Django module: {hint}"
    return None


def leads_to_a_public_module(package: str) -> bool:
    """Whether a package is a step on the way to a documented module (`django.core`)."""
    return any(public.startswith(f"{package}.") for public in DJANGO_PUBLIC_MODULES)


def name_offence(module: str, name: str) -> str | None:
    """Why `from module import name` is not public, or None when it is."""
    if is_module(f"{module}.{name}"):
        if leads_to_a_public_module(f"{module}.{name}"):
            return None
        return module_offence(f"{module}.{name}")
    if (found := module_offence(module)) is not None:
        return found
    if private_segment(name) is not None:
        return f"{name!r} is private to {library_of(module)} ({module})"
    documented = DJANGO_PUBLIC_MODULES.get(module)
    if documented is not None and name not in documented:
        return (
            f"{module}.{name} is not documented (Django documents only "
            f"{', '.join(sorted(documented))} there)"
        )
    return None


def attribute_offence(owner: str, attribute: str) -> str | None:
    """Why reaching `attribute` of a value derived from `owner` is not public."""
    library = library_of(owner)
    assert library is not None
    if is_module(owner):  # a module's attribute: one of its names, or a submodule
        return name_offence(owner, attribute)
    if attribute in INTERNAL_NAMES and INTERNAL_NAMES[attribute][0] == library:
        return f"{attribute!r} is internal to {library}: {INTERNAL_NAMES[attribute][1]}"
    if private_segment(attribute) is None:
        return None
    if DOCUMENTED_UNDERSCORE_NAMES.get(attribute) == library:
        return None
    return f"{attribute!r} is private to {library} (reached on {owner})"


# -- where names come from ------------------------------------------------------------------


def module_name(path: Path) -> str:
    """The dotted name a scanned file is imported as."""
    for folder, package in SCANNED.items():
        base = ROOT / folder
        if path.is_relative_to(base):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join((package, *parts))
    return path.stem


def absolute_module(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an ImportFrom reads, with relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


@dataclass
class SourceFile:
    """A scanned module: its name, its display path and its syntax tree."""

    name: str
    path: str
    tree: ast.Module
    is_package: bool


def imports_of(source: SourceFile) -> Iterator[tuple[ast.stmt, str, str, str]]:
    """Every import of the file: (statement, bound name, its dotted path, what is imported).

    `import a.b.c` binds `a` and imports `a.b.c`; `from a.b import c` binds `c` to `a.b.c`.
    """
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.name if alias.asname else alias.name.split(".")[0]
                yield node, alias.asname or bound, bound, alias.name
        elif isinstance(node, ast.ImportFrom):
            module = absolute_module(node, source.name, source.is_package)
            for alias in node.names:
                if alias.name != "*":
                    path = f"{module}.{alias.name}"
                    yield node, alias.asname or alias.name, path, path


def library_classes(sources: Iterable[SourceFile]) -> dict[str, str]:
    """The classes of the scanned code that subclass a library class, and that class.

    Their instances and the class itself carry the library's attributes, so
    `MyModel._meta` and a consumer's `self._inherited` are checked like library objects.
    """
    found: dict[str, str] = {}
    sources = list(sources)
    while True:  # until no new subclass appears (a subclass of a subclass, across files)
        before = len(found)
        for source in sources:
            scope = {name: path for _, name, path, _ in imports_of(source)}
            for node in source.tree.body:
                if isinstance(node, ast.ClassDef):
                    scope.setdefault(node.name, f"{source.name}.{node.name}")
            for node in source.tree.body:
                if not isinstance(node, ast.ClassDef):
                    continue
                for base in node.bases:
                    origin = dotted(base, scope)
                    origin = found.get(origin, origin) if origin else None
                    if origin and library_of(origin):
                        found.setdefault(f"{source.name}.{node.name}", origin)
        if len(found) == before:
            return found


def dotted(node: ast.expr, scope: dict[str, str]) -> str | None:
    """The dotted path of a name or attribute chain, from the names a scope binds."""
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = dotted(node.value, scope)
        return None if owner is None else f"{owner}.{node.attr}"
    return None


# -- the walk ------------------------------------------------------------------------------


class LibraryUseFinder(ast.NodeVisitor):
    """Follows what each name of a file is bound to and reports private library uses.

    Bindings are per function (a module's names, then the function's parameters and
    assignments); `self.x = <library value>` in a method binds `self.x` for the whole
    class. A derived value is written with `()` for a call and `[]` for an item, so
    `caches["default"]` is `django.core.cache.caches[]`.
    """

    def __init__(self, source: SourceFile, subclasses: dict[str, str]) -> None:
        self.source = source
        self.subclasses = subclasses
        self.offences: list[Offence] = []
        module_scope: dict[str, str] = {}
        for statement, name, path, imported in imports_of(source):
            origin = subclasses.get(path, path)
            if library_of(origin):
                module_scope[name] = origin
            self.check_import(statement, imported)
        for node in source.tree.body:
            if isinstance(node, ast.ClassDef) and (
                base := subclasses.get(f"{source.name}.{node.name}")
            ):
                module_scope[node.name] = base
        self.scopes = [module_scope]
        # Per class being visited: its scope (where `self.x` bindings live) and the
        # attributes it defines itself (a library subclass's own `self._x` is not private).
        self.classes: list[tuple[dict[str, str], set[str]]] = []

    # reporting

    def report(self, node: ast.AST, reaches: str, hint: str) -> None:
        line = getattr(node, "lineno", 0)
        self.offences.append(Offence(self.source.path, line, reaches, hint))

    def check_import(self, node: ast.stmt, imported: str) -> None:
        if not library_of(imported):
            return
        if isinstance(node, ast.Import):
            why = module_offence(imported)
            if why is not None:
                self.report(node, f"import {imported}", why)
            return
        module, _, name = imported.rpartition(".")
        if (why := name_offence(module, name)) is not None:
            self.report(node, f"from {module} import {name}", why)

    # bindings

    def bind(self, name: str, origin: str | None) -> None:
        if origin is not None and library_of(origin):
            self.scopes[-1][name] = origin
        else:
            self.scopes[-1].pop(name, None)

    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def origin(self, node: ast.expr | None) -> str | None:
        """The library path a value comes from, or None for anything else."""
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            key = self.attribute_key(node)
            if key is not None and (bound := self.lookup(key)) is not None:
                return bound
            owner = self.origin(node.value)
            return None if owner is None else f"{owner}.{node.attr}"
        if isinstance(node, ast.Call):
            owner = self.origin(node.func)
            return None if owner is None else f"{owner}()"
        if isinstance(node, ast.Subscript):
            owner = self.origin(node.value)
            return None if owner is None else f"{owner}[]"
        if isinstance(node, ast.Await | ast.Starred):
            return self.origin(node.value)
        if isinstance(node, ast.BinOp):  # `BaseCache | None` in an annotation
            return self.origin(node.left) or self.origin(node.right)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:  # a quoted annotation
                return self.origin(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return None
        return None

    @staticmethod
    def attribute_key(node: ast.Attribute) -> str | None:
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            return f"{node.value.id}.{node.attr}"
        return None

    def bind_target(self, target: ast.expr, origin: str | None) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, origin)
        elif isinstance(target, ast.Attribute) and (key := self.attribute_key(target)):
            if origin is not None and library_of(origin) and self.classes:
                self.classes[-1][0].setdefault(key, origin)
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self.bind_target(element, None if origin is None else f"{origin}[]")

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            self.bind_target(target, self.origin(node.value))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        self.bind_target(node.target, self.origin(node.value) or self.origin(node.annotation))

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.generic_visit(node)
        self.bind_target(node.target, self.origin(node.value))

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        items = self.origin(node.iter)
        self.bind_target(node.target, None if items is None else f"{items}[]")
        for statement in (*node.body, *node.orelse):
            self.visit(statement)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self.visit_For(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.visit(node.iter)
        items = self.origin(node.iter)
        self.bind_target(node.target, None if items is None else f"{items}[]")
        for condition in node.ifs:
            self.visit(condition)

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> None:
        # The loops bind the names the element reads: visit them first, in a scope.
        self.scopes.append({})
        for generator in node.generators:
            self.visit(generator)
        self.visit(node.elt)
        self.scopes.pop()

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self.visit_ListComp(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self.visit_ListComp(node)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self.scopes.append({})
        for generator in node.generators:
            self.visit(generator)
        self.visit(node.key)
        self.visit(node.value)
        self.scopes.pop()

    def visit_withitem(self, node: ast.withitem) -> None:
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            manager = self.origin(node.context_expr)
            self.bind_target(node.optional_vars, None if manager is None else f"{manager}()")

    # scopes

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in (*node.bases, *node.keywords, *node.decorator_list):
            self.visit(expression)
        library_base = self.subclasses.get(f"{self.source.name}.{node.name}")
        class_scope: dict[str, str] = {}
        defined = own_definitions(node)
        if library_base is not None:
            class_scope["self"] = class_scope["cls"] = library_base
            self.check_overrides(library_base, defined)
        self.scopes.append(class_scope)
        self.classes.append((class_scope, set(defined)))
        for statement in node.body:
            self.visit(statement)
        self.classes.pop()
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = node.args
        every_argument = (
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            *(a for a in (arguments.vararg, arguments.kwarg) if a is not None),
        )
        for expression in (
            *node.decorator_list,
            *arguments.defaults,
            *arguments.kw_defaults,
            *(argument.annotation for argument in every_argument),
            node.returns,
        ):
            if expression is not None:
                self.visit(expression)
        self.scopes.append({})
        for argument in every_argument:
            if argument.arg not in ("self", "cls"):
                self.bind(argument.arg, self.origin(argument.annotation))
        for statement in node.body:
            self.visit(statement)
        self.scopes.pop()

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.visit_FunctionDef(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.scopes.append({})
        for argument in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            self.bind(argument.arg, None)
        self.visit(node.body)
        self.scopes.pop()

    # the checks

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)
        self.check_attribute(node, self.origin(node.value), node.attr)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        reflective = isinstance(node.func, ast.Name) and node.func.id in (
            "getattr",
            "setattr",
            "hasattr",
            "delattr",
        )
        if reflective and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self.check_attribute(node, self.origin(node.args[0]), name.value)

    def check_overrides(self, library_base: str, defined: dict[str, ast.AST]) -> None:
        """A Channels consumer that defines one of its base's internals takes it over.

        Channels' only: its internals are the consumer's own attributes, while Django's
        and asgiref's listed here are those of connections and executors, whose names a
        model or a form of the project may well define for itself.
        """
        library = library_of(library_base)
        if library != "channels":
            return
        for name, where in defined.items():
            internal = INTERNAL_NAMES.get(name)
            if internal is not None and internal[0] == library:
                self.report(
                    where, f"{library_base}.{name}", f"{name!r} is internal to {library}: "
                    f"{internal[1]} (defined by a subclass, it replaces the library's own)",
                )  # fmt: skip

    def check_attribute(self, node: ast.AST, owner: str | None, attribute: str) -> None:
        if owner is None or not library_of(owner):
            return
        is_self = (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        )
        if is_self and self.classes and attribute in self.classes[-1][1]:
            return  # the subclass's own attribute, not the library's
        if (why := attribute_offence(owner, attribute)) is not None:
            self.report(node, f"{owner}.{attribute}", why)


def own_definitions(node: ast.ClassDef) -> dict[str, ast.AST]:
    """The names a class defines itself (methods, class attributes, `self.x = ...`), each
    with where it is first defined."""
    own: dict[str, ast.AST] = {}
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.setdefault(statement.name, statement)
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        for target in targets:
            if isinstance(target, ast.Name):
                own.setdefault(target.id, statement)
    for child in ast.walk(node):
        if (
            isinstance(child, ast.Attribute)
            and isinstance(child.ctx, ast.Store)
            and isinstance(child.value, ast.Name)
            and child.value.id in ("self", "cls")
        ):
            own.setdefault(child.attr, child)
    return own


def parse(path: Path) -> SourceFile:
    """A file of the checkout, ready to scan."""
    return SourceFile(
        name=module_name(path),
        path=path.relative_to(ROOT).as_posix(),
        tree=ast.parse(path.read_text(), filename=str(path)),
        is_package=path.name == "__init__.py",
    )


def find_offences(sources: list[SourceFile]) -> list[Offence]:
    """Every private use of Django, asgiref or Channels in the given files, sorted."""
    subclasses = library_classes(sources)
    offences: list[Offence] = []
    for source in sources:
        finder = LibraryUseFinder(source, subclasses)
        finder.visit(source.tree)
        offences.extend(finder.offences)
    return sorted(set(offences))


def scanned_files() -> list[Path]:
    return sorted(
        path
        for folder in SCANNED
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def test_sdk_and_console_use_only_public_apis_of_django_asgiref_and_channels() -> None:
    offences = find_offences([parse(path) for path in scanned_files()])
    assert not offences, "private library APIs in use:\n" + "\n".join(map(str, offences))


# -- the test's own test -------------------------------------------------------------------


def offences_in(*modules: tuple[str, str]) -> list[str]:
    """The offences found in fixture modules, as `module:line: reaches`."""
    sources = [
        SourceFile(
            name=name,
            path=name,
            tree=ast.parse(textwrap.dedent(code)),
            is_package=False,
        )
        for name, code in modules
    ]
    return [f"{o.path}:{o.line}: {o.reaches}" for o in find_offences(sources)]


PRIVATE_ACCESSES = {
    "underscore name imported": (
        "from django.db.models.base import _state_of\n",
        "fixture:1: from django.db.models.base import _state_of",
    ),
    "underscore module imported": (
        "import django.utils._os\n",
        "fixture:1: import django.utils._os",
    ),
    "undocumented module": (
        "from django.db.backends.utils import CursorWrapper\n",
        "fixture:1: from django.db.backends.utils import CursorWrapper",
    ),
    "undocumented name of a partly documented module": (
        "from django.db.models.expressions import Col\n",
        "fixture:1: from django.db.models.expressions import Col",
    ),
    "private attribute of a derived value": (
        "from django.core.cache import caches\ncache = caches['default']\nx = cache._cache\n",
        "fixture:3: django.core.cache.caches[]._cache",
    ),
    "private attribute through a module": (
        "import django.core.cache\nx = django.core.cache._private\n",
        "fixture:2: django.core.cache._private",
    ),
    "asgiref internal without an underscore": (
        "from asgiref.sync import SyncToAsync\nx = SyncToAsync.single_thread_executor\n",
        "fixture:2: asgiref.sync.SyncToAsync.single_thread_executor",
    ),
    "django internal written in a loop": (
        "from django.db import connections\n"
        "for connection in connections.all():\n"
        "    connection.errors_occurred = False\n",
        "fixture:3: django.db.connections.all()[].errors_occurred",
    ),
    "private attribute of an annotated parameter": (
        "from django.core.cache import BaseCache\n"
        "def f(cache: BaseCache | None) -> None:\n"
        "    cache._servers\n",
        "fixture:3: django.core.cache.BaseCache._servers",
    ),
    "getattr with a private name": (
        "from channels.layers import get_channel_layer\ngetattr(get_channel_layer(), '_groups')\n",
        "fixture:2: channels.layers.get_channel_layer()._groups",
    ),
    "channels internal taken over by a consumer": (
        "from channels.generic.websocket import AsyncWebsocketConsumer\n"
        "class Chat(AsyncWebsocketConsumer):\n"
        "    @property\n"
        "    def channel_receive(self) -> object:\n"
        "        return None\n",
        "fixture:4: channels.generic.websocket.AsyncWebsocketConsumer.channel_receive",
    ),
    "a django model's own field named like a connection internal is its own": (
        "from django.db import models\n"
        "class Shift(models.Model):\n"
        "    close_at = models.DateTimeField()\n"
        "    print(Shift.objects.all()._private)\n",
        "fixture:4: django.db.models.Model.objects.all()._private",
    ),
    "inherited private attribute on self": (
        "from channels.generic.websocket import AsyncWebsocketConsumer\n"
        "class Chat(AsyncWebsocketConsumer):\n"
        "    async def connect(self) -> None:\n"
        "        self._own = 1\n"
        "        print(self._own, self._inherited)\n",
        "fixture:5: channels.generic.websocket.AsyncWebsocketConsumer._inherited",
    ),
}


@pytest.mark.parametrize("case", list(PRIVATE_ACCESSES))
def test_a_private_access_is_reported_with_its_line(case: str) -> None:
    code, expected = PRIVATE_ACCESSES[case]
    assert offences_in(("fixture", code)) == [expected]


def test_a_subclass_in_another_module_carries_the_library_class() -> None:
    models = "from django.db import models\nclass Part(models.Model):\n    pass\n"
    use = "from app.models import Part\nPart._meta\nPart._secret\n"
    assert offences_in(("app.models", models), ("app.use", use)) == [
        "app.use:3: django.db.models.Model._secret"
    ]


def test_public_uses_are_not_reported() -> None:
    code = """
    from django.conf import settings
    from django.core.cache import caches
    from django.db import close_old_connections, connection, models, transaction
    from django.http import HttpResponse
    from django.utils.translation import gettext as _
    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer

    class Part(models.Model):
        name = models.CharField(max_length=10)

        def label(self) -> str:
            self._label = self.name
            return self._label + self._meta.verbose_name

    class Plain:
        def __init__(self) -> None:
            self._cache = {}

    def view(request, part: Part) -> HttpResponse:
        caches["default"].get("key")
        close_old_connections()
        connection.close()
        with transaction.atomic() as block:
            print(block)
        Part._default_manager.all()
        print(part._state.adding, settings.DEBUG, _("hi"), get_channel_layer())
        Plain()._cache
        return HttpResponse(sync_to_async(print).__name__)
    """
    assert offences_in(("fixture", code)) == []


def test_every_listed_public_module_exists() -> None:
    """A typo in the allow-list would let nothing through and mean nothing."""
    missing = [name for name in DJANGO_PUBLIC_MODULES if not is_module(name)]
    assert missing == []


def test_an_offence_reads_as_file_line_and_hint() -> None:
    offence = Offence("sdk/x.py", 3, "django.db.connection.in_atomic_block", "use atomic()")
    assert str(offence) == "sdk/x.py:3: django.db.connection.in_atomic_block -- use atomic()"
