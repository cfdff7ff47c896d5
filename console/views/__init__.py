"""The console screens, one module per area."""
