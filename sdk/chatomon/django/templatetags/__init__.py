"""Template tags of the chatomon app: `{% load chatomon_widget %}`."""
