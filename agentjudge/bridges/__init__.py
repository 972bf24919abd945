"""Adapters from agent frameworks' results to Context."""
