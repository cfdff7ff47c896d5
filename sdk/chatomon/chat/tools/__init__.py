"""The chat tools over application data, and `Toolset`, which the tool loop calls.

The discovery strategy offers search_managers, get_manager_schema, find_path, query,
aggregate and, when any mutation is allowed, mutate; the direct strategy adds one
`query_<manager>` tool per exposed manager. Every tool error is a result the model can
read and correct (`{"status": "error", "code", "message", "allowed"}`).

```python
from chatomon.chat.tools import ToolSettings, Toolset
from chatomon.data.fixtures import toy_registry

toolset = Toolset(toy_registry())
await toolset.call("query", {"manager": "PartManager"}, toolset.context())
```

`execute_mutation` (for the confirmation flow) lives in `chatomon.data.mutations` and is
re-exported here.
"""

from chatomon.chat.tools.context import AuditHook, ToolContext, ToolSettings, ToolStrategy
from chatomon.chat.tools.definitions import direct_query_name
from chatomon.chat.tools.results import ERROR_CODES, tool_error
from chatomon.chat.tools.toolset import MUTATE, BlockingRunner, Tool, Toolset, in_callers_thread
from chatomon.data.mutations import aexecute_mutation, execute_mutation

__all__ = [
    "ERROR_CODES",
    "MUTATE",
    "AuditHook",
    "BlockingRunner",
    "Tool",
    "ToolContext",
    "ToolSettings",
    "ToolStrategy",
    "Toolset",
    "aexecute_mutation",
    "direct_query_name",
    "execute_mutation",
    "in_callers_thread",
    "tool_error",
]
