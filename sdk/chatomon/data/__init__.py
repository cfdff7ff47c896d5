"""Application data for the assistant: managers, mutations and the schema index.

```python
from chatomon.data import Manager, ManagerRegistry, mutation

class PartManager(Manager):
    model = Part                      # a Django model, or `records = [...]`
    description = "Designed or purchased components."
    fields = ["name", "unit_cost"]
    relations = {"material": "MaterialManager"}
    chat_exposed = True

registry = ManagerRegistry([PartManager, MaterialManager])
registry.validate()                   # every declaration mistake, all at once
index = registry.schema_index()       # what the chat tools read
```

Importing this package needs no Django settings: the Django backend is imported only when
a manager with a model is resolved. `import chatomon` does not import it.
"""

from chatomon.data.actor import Actor, SimpleActor, is_authenticated
from chatomon.data.autodiscovery import autodiscover
from chatomon.data.errors import (
    DataConfigurationError,
    DataError,
    PermissionDeniedError,
    QueryTimeoutError,
)
from chatomon.data.fields import FIELD_TYPES, LOOKUPS, FieldSpec, FieldType, RelationSpec
from chatomon.data.manager import Manager
from chatomon.data.mutations import Mutation, aexecute_mutation, execute_mutation, mutation
from chatomon.data.registration import ManagerRegistry, registry
from chatomon.data.schema import (
    FieldSchema,
    ManagerSchema,
    RelationPath,
    RelationSchema,
    SchemaIndex,
)

__all__ = [
    "FIELD_TYPES",
    "LOOKUPS",
    "Actor",
    "DataConfigurationError",
    "DataError",
    "FieldSchema",
    "FieldSpec",
    "FieldType",
    "Manager",
    "ManagerRegistry",
    "ManagerSchema",
    "Mutation",
    "PermissionDeniedError",
    "QueryTimeoutError",
    "RelationPath",
    "RelationSchema",
    "RelationSpec",
    "SchemaIndex",
    "SimpleActor",
    "aexecute_mutation",
    "autodiscover",
    "execute_mutation",
    "is_authenticated",
    "mutation",
    "registry",
]
