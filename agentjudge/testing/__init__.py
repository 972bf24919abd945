"""Test doubles for users: scripted judges, a fake model server."""
