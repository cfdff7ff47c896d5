"""Private machinery of the guarded turn: chains, decisions, capture, streaming.

Nothing here is public API; `chatomon.Atom` and `chatomon.Turn` are the way in.
"""
