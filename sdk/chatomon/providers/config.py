"""What a provider's configuration may hold, as a pydantic model, and its errors.

A built-in provider declares `default_config` (every key with its default) and a
`config_model`, a `ProviderConfig` whose fields say what each key accepts. The errors are
read by `chatomon._validation.problem_of`, the same reading as settings.CHATOMON's, and
raised as `ConfigurationError` naming the provider, the key, the value and what is allowed:

```
OpenAIProvider setting 'temperature' must be a number from 0 to 2, or None, got 3
OpenAIProvider setting 'modle' is unknown; did you mean 'model'? (known: api, api_key, ...)
```
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chatomon._validation import (
    Count,
    HttpUrl,
    Problem,
    Seconds,
    Secret,
    Text,
    problem_of,
    unknown_key_problem,
)
from chatomon.errors import ConfigurationError

__all__ = ["HostedConfig", "ProviderConfig", "check_config", "check_config_keys"]


class ProviderConfig(BaseModel):
    """Base of the providers' configuration models: no unknown keys, immutable.

    Fields carry no defaults (`default_config` holds them): the model checks the merged
    configuration, and `description` says what a field accepts, for the error message.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class HostedConfig(ProviderConfig):
    """The keys every adapter of a hosted API (OpenAI, Anthropic, Gemini) accepts."""

    model: Text = Field(description="a non-empty model name")
    # Never echoed: a bad credential is shown as "<redacted>".
    api_key: Annotated[Text | None, Secret()] = Field(description="a non-empty string or None")
    base_url: HttpUrl | None = Field(description="an http(s) URL such as http://host/v1, or None")
    timeout_seconds: Seconds = Field(description="a positive number of seconds")
    stream_timeout_seconds: Seconds = Field(description="a positive number of seconds")
    max_retries: Count = Field(description="a whole number of at least 0")


def check_config_keys(provider: str, config: Mapping[str, Any], known: Iterable[str]) -> None:
    """Raise for the first key of `config` that is none of `known`, with a "did you mean".

    Raises:
        ConfigurationError: Naming the key, the known keys and the closest of them.
    """
    names = tuple(known)
    for key in config:
        if key not in names:
            raise _configuration_error(provider, unknown_key_problem(key, names))


def check_config(provider: str, model: type[ProviderConfig], settings: Mapping[str, Any]) -> None:
    """Validate `settings` (the configuration over the defaults) with `model`.

    Raises:
        ConfigurationError: For the first key that is unknown or holds a wrong value.
    """
    try:
        model.model_validate(dict(settings))
    except ValidationError as error:
        # Not chained: pydantic's own text would repeat a secret the problem redacts.
        raise _configuration_error(provider, problem_of(error, model)) from None


def _configuration_error(provider: str, problem: Problem) -> ConfigurationError:
    return ConfigurationError.from_problem(problem, f"{provider} setting {problem.key!r}")
