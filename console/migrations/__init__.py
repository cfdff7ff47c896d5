"""The console's migrations."""
