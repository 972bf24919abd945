"""Offline evaluation harness: JSONL datasets, runs, results files, gates, CLI."""
