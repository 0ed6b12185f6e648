"""Shared pytest setup: fixture builders live in tests/support/ and build real binaries at test time."""
