"""The chatomon management commands."""
