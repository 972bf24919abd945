"""agentjudge."""
