"""`demo_seed`."""
