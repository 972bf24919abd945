"""An environment in which botocore finds the fake's credentials and nothing of the machine's.

The Bedrock tests (online, batch, the CLI) sign requests for `FakeModelServer` with its test
keys; a developer's own AWS variables, profile files or an instance's metadata service must not
change what they sign or where they send it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from sdk_support import import_sdk

from agentjudge.testing._fake_bedrock import FAKE_AWS_ACCESS_KEY_ID, FAKE_AWS_SECRET_ACCESS_KEY

__all__ = ["botocore_session", "fake_aws_environment", "use_fake_aws"]

_OURS = ("AWS_", "AGENTJUDGE_BEDROCK_")
"""Prefixes of the variables the tests set themselves (any other value is dropped)."""


def fake_aws_environment(base: Mapping[str, str], folder: Path) -> dict[str, str]:
    """``base`` without its AWS and agentjudge Bedrock variables, plus the fake's credentials.

    Region us-west-2; the shared credentials and config files are ``folder/none`` (absent) and
    the metadata service is off, so botocore's chain finds the fake's keys and nothing else.
    """
    kept = {name: value for name, value in base.items() if not name.startswith(_OURS)}
    return {
        **kept,
        "AWS_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": FAKE_AWS_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": FAKE_AWS_SECRET_ACCESS_KEY,
        "AWS_SHARED_CREDENTIALS_FILE": str(folder / "none"),
        "AWS_CONFIG_FILE": str(folder / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def use_fake_aws(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """`fake_aws_environment` in this process's environment (undone after the test)."""
    for name in [name for name in os.environ if name.startswith(_OURS)]:
        monkeypatch.delenv(name)
    for name, value in fake_aws_environment({}, folder).items():
        monkeypatch.setenv(name, value)


@functools.cache
def botocore_session() -> Any:
    """One botocore session for the tests that build botocore's own clients.

    A new session reads and parses the service models and endpoint rules again: 0.15-0.25 s
    of CPU per ``create_client`` against ~0.01 s on a session that has them. Clients made from
    it still take their region, keys, endpoint and config from the ``create_client`` call.
    """
    return import_sdk("botocore.session").get_session()
