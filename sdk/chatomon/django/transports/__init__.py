"""Where a turn enters: the chat views, the WebSocket consumer, and their admission.

HTTP, SSE and confirm views, the Channels consumer, and the checks every transport runs
before a turn (permission, body, owner, rate limits).
"""
