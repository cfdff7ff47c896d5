"""Template tags of the console."""
