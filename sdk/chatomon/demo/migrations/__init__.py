"""The demo app's migrations."""
