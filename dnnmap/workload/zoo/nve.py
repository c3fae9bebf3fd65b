"""Placeholder; filled by the zoo work."""
