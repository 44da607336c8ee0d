"""Benchmarks of mainsdk-memory, run by hand (``python -m benchmarks.NAME``); not tests."""
