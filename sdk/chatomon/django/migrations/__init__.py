"""The chatomon app's migrations."""
