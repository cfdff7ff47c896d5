"""A Django app holding the toy data as models, with its chat.py managers and mutations."""
