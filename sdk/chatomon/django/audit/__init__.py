"""What a turn leaves for operators: the audit listener and writer, and the chat signals."""
