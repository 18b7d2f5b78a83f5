"""Factories that write real files for tests."""
