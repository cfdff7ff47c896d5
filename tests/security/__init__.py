"""Hostile input, isolation, redaction and markup, tried against real servers."""
