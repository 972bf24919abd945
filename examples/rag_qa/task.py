"""The system under test: a tiny, deterministic support assistant for the "Nimbus R7" router.

It answers from a local table of help articles (no network, no model): it picks the articles
whose keywords appear in the question, routes the question to the first article's team, and
cites every article it used. Questions that match nothing are refused. A few questions trip it
up on purpose (an extra article cited, an article missed, a wrong route), so the report has
something to show.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from agentjudge.harness import Case, TaskOutput


class Article(NamedTuple):
    route: str
    keywords: tuple[str, ...]
    text: str


ARTICLES: dict[str, Article] = {
    "kb-setup": Article(
        "setup",
        ("setup", "install", "connect"),
        "Plug the Nimbus R7 into your modem, open nimbus.local and follow the setup wizard.",
    ),
    "kb-wifi-password": Article(
        "setup",
        ("password", "passphrase"),
        "Change the Wi-Fi password under Settings > Wireless > Security.",
    ),
    "kb-guest": Article(
        "setup",
        ("guest",),
        "Enable a guest network under Settings > Wireless > Guest network.",
    ),
    "kb-reset": Article(
        "troubleshooting",
        ("reset", "factory"),
        "Hold the reset button for 10 seconds until the light blinks amber to factory reset.",
    ),
    "kb-slow": Article(
        "troubleshooting",
        ("slow", "speed"),
        "Slow speeds: move the router off the floor, pick the 5 GHz band and update firmware.",
    ),
    "kb-firmware": Article(
        "troubleshooting",
        ("firmware", "update"),
        "Update firmware under Settings > System > Firmware; the router restarts once.",
    ),
    "kb-lights": Article(
        "troubleshooting",
        ("light", "lights", "blinking", "led"),
        "A red light means no internet; amber blinking means a reset or update is running.",
    ),
    "kb-refund": Article(
        "billing",
        ("refund", "return"),
        "Returns are accepted within 30 days of purchase with the receipt for a full refund.",
    ),
    "kb-warranty": Article(
        "billing",
        ("warranty", "broken"),
        "The Nimbus R7 has a two-year warranty covering hardware faults.",
    ),
    "kb-subscription": Article(
        "billing",
        ("subscription", "plan", "cancel"),
        "Cancel the Nimbus Shield subscription any time under Account > Plans.",
    ),
}

_WORD = re.compile(r"[a-z0-9-]+")


def answer(case: Case) -> TaskOutput:
    """Answer one question from the help articles."""
    question = case.input
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"case {case.id}: the question is empty")
    words = set(_WORD.findall(question.lower()))
    hits = [key for key, article in ARTICLES.items() if words & set(article.keywords)]
    if not hits:
        return TaskOutput(
            "Sorry, I can only help with the Nimbus R7 router.", route="general", refused=True
        )
    return TaskOutput(
        " ".join(ARTICLES[key].text for key in hits),
        citations=tuple(hits),
        route=ARTICLES[hits[0]].route,
    )
