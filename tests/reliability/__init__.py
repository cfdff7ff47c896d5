"""Faults: the database, Redis, providers and worker processes failing around real turns."""
