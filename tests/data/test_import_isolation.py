"""chatomon.data imports without Django settings; `import chatomon` does not import it."""

from __future__ import annotations

import subprocess
import sys


def run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={}
    )
    return result.stdout.strip()


def test_the_data_package_and_the_tools_need_no_django() -> None:
    code = (
        "import sys;"
        "from chatomon.chat.tools import Toolset;"
        "from chatomon.data.fixtures import toy_registry;"
        "t = Toolset(toy_registry());"
        "r = t.call_sync('query', {'manager': 'PartManager'}, t.context());"
        "print(r['total_count'], 'django' in sys.modules)"
    )
    assert run(code) == "3 False"


def test_import_chatomon_does_not_import_the_data_package() -> None:
    code = (
        "import sys, chatomon;"
        "print(sorted(m for m in sys.modules if m.startswith(('chatomon.data', 'chatomon.chat'))))"
    )
    assert run(code) == "[]"
