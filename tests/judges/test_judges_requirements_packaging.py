"""Requirement normalisation follows `packaging` (PEP 440 / PEP 508), not a hand-made parser."""

from __future__ import annotations

import pytest

from agentjudge.judges import compare_contents, normalize_requirement


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("a>=1.0", "a >= 1.0.0"),
        ("a==2.0,!=2.1.0", "A != 2.1, == 2"),
        ("a[Extra_One]>=1", "a[extra-one] >= 1.0"),
        (
            "a; python_version<'3.8' and os_name=='nt'",
            'a ; python_version < "3.8" and os_name == "nt"',
        ),
    ],
)
def test_equivalent_versions_normalise_alike(left: str, right: str) -> None:
    """Versions equal under PEP 440 (trailing zeros) and respelled markers normalise alike."""
    assert normalize_requirement(left) == normalize_requirement(right)


def test_compatible_release_keeps_its_precision() -> None:
    """``~=1.4.0`` and ``~=1.4`` allow different versions, so they stay different."""
    assert normalize_requirement("a~=1.4.0") != normalize_requirement("a~=1.4")


def test_invalid_requirement_is_kept_as_text() -> None:
    """A line that is not PEP 508 is whitespace-collapsed, never half-parsed."""
    assert normalize_requirement("  not   a requirement!! ") == "not a requirement!!"


def test_requirements_files_with_equivalent_versions_match() -> None:
    """requirements.txt lines differing only by trailing zeros are the same requirement."""
    assert compare_contents("requirements.txt", b"httpx>=0.27.0\n", b"httpx >= 0.27\n") == []
