"""Management commands of the chatomon app."""
