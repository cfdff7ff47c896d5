"""Console view tests."""
