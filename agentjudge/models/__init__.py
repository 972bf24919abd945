"""Model clients over httpx: OpenAI-compatible and Anthropic, retries, rate limits, cache."""
