"""The demo's Django modules need the demo settings; pytest must not import them as doctests.

tests/demo/ and tests/browser/ run the demo in processes of its own.
"""

collect_ignore_glob = ["*"]
