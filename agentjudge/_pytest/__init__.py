"""The pytest plugin's implementation (loaded by the ``_agentjudge_pytest`` entry point module).

Its own layer above the harness, testing and bridges (see ``[tool.importlinter]``): it joins
`agentjudge.testing`'s assertions with the harness's dataset reader, summary tallies and gate
parser, which `agentjudge.testing` may not import. Nothing here is public API: users see the
fixtures, the marker and the options (docs/how-to/pytest.md).
"""
