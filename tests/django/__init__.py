"""Tests of the chatomon Django app."""
