"""The `real_llm` tier: providers driven against a real model running on this machine."""
