"""Helpers the tests share: real servers, real processes, job handlers and fixtures'
building blocks. Nothing here is collected as a test."""
