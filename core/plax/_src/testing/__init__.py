"""Helpers for plax's own test suite (and for plugin authors testing against plax)."""
