"""Agreement in ``summary.json``: judges against human labels, and jury members among themselves.

What is compared (per case; cases whose task errored are never judged and not counted):

* **A judge (or the case verdict) against the human label** (`AgreementSummary`). The human
  label is the dataset row's ``human``. A boolean means ``"pass"`` (true) / ``"fail"`` (false)
  and, like the status words ``"pass"`` and ``"fail"``, is compared with the judgment's
  status. Any other string is compared with the judgment's ``label`` when it has one, else its
  status value. A number is compared with the judgment's effective score (its score, else 1.0
  for PASS and 0.0 for FAIL): ``accuracy``, ``confusion`` and ``cohen_kappa`` count exact
  equality, and ``krippendorff_alpha`` is computed at the **interval** level (it credits near
  misses; read it, not accuracy, for continuous scores). When every label of a judge's cases is
  a number the level is ``"interval"``; otherwise ``"nominal"``. ABSTAIN and ERROR judgments
  are counted apart (``abstained``), never in ``n``; ``not_judged`` counts labelled cases the
  judge gave no judgment on (sampling drew it out, or its cascade tier was never reached), so
  ``n + abstained.abstain + abstained.error + not_judged == labelled``.
* **Members of a jury among themselves** (`InterJudgeSummary`). Juries are read from the
  results themselves: results whose names share the prefix before their last ``/`` and the
  same cascade tier are the members of one jury (a flat list or mapping of judges is the jury
  ``"jury"``; a cascade tier's jury is named after the tier, prefixed by its cascade's path
  when nested). Members are compared on one scale (``scale``, `common_scale`): their labels
  when they share one label vocabulary, else their status (PASS/FAIL), so an LLM judge
  labelling ``"yes"``/``"no"`` and a plain judge rated pass/fail agree where their statuses
  do (``scale_reason`` says why the scale was chosen). ABSTAIN, ERROR, unsampled and
  not-reached members are missing. ``fleiss_kappa`` uses the cases where
  every member rated (``n``); ``krippendorff_alpha`` (nominal) uses every case, missing ratings
  included (cases with fewer than two ratings carry no information and drop out,
  ``alpha_n`` counts the others); ``pairwise[a][b]`` is the share of the cases both ``a`` and
  ``b`` rated on which they gave the same rating, with its n and Wilson interval. A member
  that is itself a jury or cascade is measured inside its own jury, not as a rater of the
  outer one (its aggregate is not in the results).

Undefined coefficients are null, never NaN, with the reason in ``undefined``: no case to
measure (n = 0), or a single label among all ratings (chance agreement is 1, so kappa and
alpha are 0/0; `agentjudge.agreement` itself returns 1.0 there, which a gate must not read as
proof of agreement).

Memory: the tally counts distinct per-case profiles (human label, verdict, each result's name,
tier, status, label, and score when the human label is a number), so it stays small however
many cases there are, except for numeric labels against fractional scores (one entry a case).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentjudge.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha, wilson_interval
from agentjudge.harness._fold import FoldCase, Judged, effective_score

__all__ = [
    "AgreementSummary",
    "AgreementTally",
    "InterJudgeSummary",
    "JurySummary",
    "PairAgreement",
    "agrees_with_human",
    "common_scale",
    "compared_as",
    "jury_groups",
]

_STATUS_WORDS = frozenset(("pass", "fail"))
_ABSTAINED = frozenset(("abstain", "error"))

Human = str | bool | int | float
Rating = str | float
Scale = Literal["status", "label"]
_Rated = tuple[str, str | None]  # (status, label) of one PASS/FAIL member rating
# (name, tier, status, label, effective score or None): one judgment as the tally keeps it.
_Item = tuple[str, str | None, str, str | None, float | None]
_Profile = tuple[Human | None, _Item | None, tuple[_Item, ...]]


# ----------------------------------------------------------------------------- models
class AgreementSummary(BaseModel):
    """Agreement of one judge (or of the case verdicts) with the human labels."""

    model_config = ConfigDict(extra="allow")

    n: int
    """Labelled cases the judge gave PASS or FAIL on (the cases compared)."""
    accuracy: float | None
    """Share of the ``n`` cases where the judge matched the human label; None when n = 0."""
    accuracy_ci95: tuple[float, float] | None
    """95% Wilson interval of ``accuracy``."""
    cohen_kappa: float | None
    """Cohen's kappa (nominal) of judge vs human; None when undefined (see ``undefined``)."""
    krippendorff_alpha: float | None
    """Krippendorff's alpha at ``level``; None when undefined (see ``undefined``)."""
    level: Literal["nominal", "interval"] = "nominal"
    """``interval`` when every human label is a number (compared with the judge's score)."""
    confusion: dict[str, dict[str, int]] = Field(default_factory=dict)
    """``{human label: {judge label: count}}`` over the ``n`` cases."""
    abstained: dict[str, int] = Field(default_factory=lambda: {"abstain": 0, "error": 0})
    """Labelled cases the judge answered ABSTAIN or ERROR on (not in ``n``)."""
    not_judged: int = 0
    """Labelled cases without a judgment from this judge (unsampled, tier not reached)."""
    labelled: int = 0
    """Labelled cases that were judged at all (task errors excluded)."""
    undefined: dict[str, str] = Field(default_factory=dict)
    """Why a coefficient above is None, by its name."""


class PairAgreement(BaseModel):
    """How often two jury members gave the same rating."""

    model_config = ConfigDict(extra="allow")

    n: int
    """Cases both members rated."""
    agreement: float | None
    """Share of those cases with the same rating; None when n = 0."""
    agreement_ci95: tuple[float, float] | None
    """95% Wilson interval of ``agreement``."""


class InterJudgeSummary(BaseModel):
    """Agreement among the members of one jury (no human labels needed)."""

    model_config = ConfigDict(extra="allow")

    n: int
    """Cases every member rated (what ``fleiss_kappa`` is over)."""
    fleiss_kappa: float | None
    """Fleiss' kappa over the ``n`` complete cases; None when undefined."""
    krippendorff_alpha: float | None
    """Krippendorff's alpha (nominal), missing ratings allowed; None when undefined."""
    alpha_n: int = 0
    """Cases with at least two ratings (what ``krippendorff_alpha`` is over)."""
    pairwise: dict[str, dict[str, PairAgreement]] = Field(default_factory=dict)
    """``pairwise[a][b]`` for members ``a`` before ``b`` in jury order."""
    undefined: dict[str, str] = Field(default_factory=dict)
    """Why a coefficient above is None, by its name."""
    scale: Scale = "status"
    """What was compared: ``"label"`` (the members share one label vocabulary) or
    ``"status"`` (PASS/FAIL; each label mapped through the status its judge gave with it)."""
    scale_reason: str = ""
    """Why that scale (`common_scale`)."""

    @property
    def pairwise_min(self) -> float | None:
        """The lowest defined pairwise agreement (None when there is none)."""
        shares = [
            p.agreement
            for row in self.pairwise.values()
            for p in row.values()
            if p.agreement is not None
        ]
        return min(shares) if shares else None


class JurySummary(BaseModel):
    """One jury of the run: its members and how much they agree."""

    model_config = ConfigDict(extra="allow")

    members: list[str]
    """The members' result names, in the run's judge order."""
    tier: str | None = None
    """The cascade tier the jury is, if any."""
    inter_judge: InterJudgeSummary


# ----------------------------------------------------------------------------- tally
def _numeric(human: Human | None) -> bool:
    return isinstance(human, int | float) and not isinstance(human, bool)


def _human(value: Any) -> Human | None:
    """The label as the tally keeps it: a bool is the status word it means (True == 1 else)."""
    if isinstance(value, bool):
        return "pass" if value else "fail"
    return value  # type: ignore[no-any-return]


def compared_as(human: Human, status: str, label: str | None, score: float | None) -> Rating:
    """What a PASS/FAIL judgment is compared with a human label as: THE agreement rule.

    ``human`` is a tally label (a bool already turned into its status word): the words
    ``"pass"``/``"fail"`` compare with the status, another string with the label when set,
    else the status; a number with the effective ``score`` (required then).
    """
    if isinstance(human, str):
        return status if human in _STATUS_WORDS or label is None else label
    assert score is not None  # a PASS/FAIL judgment always has an effective score
    return score


def agrees_with_human(
    human: Any, status: str, label: str | None, score: float | None = None
) -> bool:
    """Whether a PASS/FAIL judgment agrees with a dataset row's ``human`` (`compared_as`).

    A bool means ``"pass"``/``"fail"``; for a number, a missing ``score`` is the effective
    score of the status (1.0 for PASS, 0.0 for FAIL).
    """
    label_of = _human(human)
    assert label_of is not None  # only labelled cases are compared
    if not isinstance(label_of, str) and score is None:
        score = 1.0 if status == "pass" else 0.0
    return compared_as(label_of, status, label, score) == label_of


def _item(judged: Judged, numeric: bool) -> _Item:
    """One judgment as the tally keeps it (its effective score only for numeric labels)."""
    name, tier, status, _, label, _, _ = judged
    assert status is not None  # only judgments are kept
    return (name, tier, status, label, effective_score(judged) if numeric else None)


class AgreementTally:
    """Counts of per-case profiles, from which every agreement block is computed at the end.

    Two tables: ``ratings`` counts, for every judged case with two or more results, the flat
    tuple ``(name, status, label, name, status, label, ...)`` of its judgments (one dict update
    a case; a leaf's cascade tier never changes, so ``tiers`` learns it when a new tuple first
    appears, or from a case with an unsampled result, which the tuple leaves out);
    ``labelled`` counts, for labelled cases only, ``(human, verdict item, judgment items)``
    with the scores numeric labels need.
    """

    __slots__ = ("labelled", "ratings", "tiers")

    def __init__(self) -> None:
        self.ratings: dict[tuple[str | None, ...], int] = {}
        self.tiers: dict[str, str | None] = {}
        self.labelled: Counter[_Profile] = Counter()

    def add(self, case: FoldCase) -> None:
        """Fold in one case: its jury ratings, and its judgments when it carries a label."""
        results = case.results
        if len(results) > 1:
            flat: list[str | None] = []
            for r in results:
                if r.status is not None:
                    flat += (r.name, r.status, r.label)
            key = tuple(flat)
            count = self.ratings.get(key)
            if count is None or len(flat) < 3 * len(results):  # a new profile, or unsampled
                self.tiers.update((r.name, r.tier) for r in results)
            self.ratings[key] = (count or 0) + 1
        verdict = case.verdict
        if case.human is None or verdict is None:
            return
        label = _human(case.human)
        numeric = _numeric(label)
        items = tuple(_item(r, numeric) for r in results if r.status is not None)
        self.labelled[(label, _item(verdict, numeric), items)] += 1

    def merge(self, other: AgreementTally) -> None:
        """Fold in another tally (of other cases)."""
        ratings = self.ratings
        for key, count in other.ratings.items():
            ratings[key] = ratings.get(key, 0) + count
        self.tiers.update(other.tiers)
        self.labelled.update(other.labelled)

    def judge_agreement(self, names: Iterable[str]) -> dict[str, AgreementSummary]:
        """Each judge's agreement with the human labels (empty when no case is labelled)."""
        pairs: dict[str, _Pairs] = {name: _Pairs() for name in names}
        labelled = 0
        for (human, _, items), count in self.labelled.items():
            assert human is not None
            labelled += count
            for item in items:
                pairs.setdefault(item[0], _Pairs()).add(human, item, count)
        if not labelled:
            return {}
        return {name: p.summary(labelled) for name, p in pairs.items()}

    def verdict_agreement(self) -> AgreementSummary | None:
        """The case verdicts' agreement with the human labels; None when no case is labelled."""
        pairs = _Pairs()
        labelled = 0
        for (human, verdict, _), count in self.labelled.items():
            assert human is not None and verdict is not None
            labelled += count
            pairs.add(human, verdict, count)
        return pairs.summary(labelled) if labelled else None

    def juries(self, order: Sequence[str], root: str = "jury") -> dict[str, JurySummary]:
        """Every jury of two or more members, with its inter-judge agreement.

        ``root`` names the top-level jury (its members' results carry no prefix).
        """
        return {
            name: JurySummary(members=members, tier=tier, inter_judge=self._inter_judge(members))
            for name, (members, tier) in jury_groups(self.tiers.items(), order, root).items()
        }

    def _member_ratings(self, members: list[str]) -> Iterator[tuple[list[_Rated | None], int]]:
        """Per distinct case profile: each member's (status, label) or None, and its count."""
        index = {name: i for i, name in enumerate(members)}
        for flat, count in self.ratings.items():
            ratings: list[_Rated | None] = [None] * len(members)
            for k in range(0, len(flat), 3):
                i = index.get(flat[k])  # type: ignore[arg-type]
                status, label = flat[k + 1], flat[k + 2]
                if i is not None and status not in _ABSTAINED:
                    ratings[i] = (str(status), label)
            if any(r is not None for r in ratings):
                yield ratings, count

    def _inter_judge(self, members: list[str]) -> InterJudgeSummary:
        scale, reason = common_scale(members, self._member_ratings(members))
        table: Counter[tuple[str | None, ...]] = Counter()
        for ratings, count in self._member_ratings(members):
            key = tuple(None if r is None else r[1] if scale == "label" else r[0] for r in ratings)
            table[key] += count
        return _inter_judge_summary(members, table, scale, reason)


def common_scale(
    members: Sequence[str], profiles: Iterable[tuple[Sequence[_Rated | None], int]]
) -> tuple[Scale, str]:
    """THE rule for the scale jury members are compared on, and why (`InterJudgeSummary`).

    ``"label"`` when the members share one label vocabulary: every PASS/FAIL rating carries a
    label, the members that rated used the same set of labels, and no label stands for PASS
    with one rating and FAIL with another. Otherwise ``"status"``: each label is mapped
    through the status its judge gave with it (an LLM judge's ``"yes"`` is its PASS, a
    classifier's pass labels are PASS), so judges with different vocabularies, or with none,
    are compared on PASS/FAIL.
    """
    vocabularies: list[set[str]] = [set() for _ in members]
    statuses: dict[str, set[str]] = {}
    unlabelled: set[str] = set()
    for ratings, _ in profiles:
        for i, rated in enumerate(ratings):
            if rated is None:
                continue
            status, label = rated
            if label is None:
                unlabelled.add(members[i])
            else:
                vocabularies[i].add(label)
                statuses.setdefault(label, set()).add(status)
    if unlabelled:
        return "status", f"{', '.join(sorted(unlabelled))}: ratings without a label"
    mixed = sorted(label for label, seen in statuses.items() if len(seen) > 1)
    if mixed:
        return "status", f"label {mixed[0]!r} stands for PASS and for FAIL"
    used = [(name, v) for name, v in zip(members, vocabularies, strict=True) if v]
    if any(v != used[0][1] for _, v in used):
        shown = "; ".join(f"{name}: {'/'.join(sorted(v))}" for name, v in used)
        return "status", f"the members' labels differ ({shown})"
    return "label", "the members share one label vocabulary"


def jury_groups(
    judges: Iterable[tuple[str, str | None]], order: Sequence[str], root: str = "jury"
) -> dict[str, tuple[list[str], str | None]]:
    """The juries that ``judges`` (name, cascade tier) form: name -> (members, tier).

    THE rule for naming juries (summaries and the gate check both use it): judges sharing the
    name prefix before their last ``/`` and the same tier form one jury, if there are two or
    more of them; members are in ``order``. The top-level jury is ``root``; a cascade tier's
    jury is named after the tier (``"<path>/<tier>"`` when nested); a nested jury by its path.
    """
    rank = {name: i for i, name in enumerate(order)}
    groups: dict[tuple[str, str | None], set[str]] = {}
    for name, tier in judges:
        groups.setdefault((name.rpartition("/")[0], tier), set()).add(name)
    out: dict[str, tuple[list[str], str | None]] = {}
    for (parent, tier), found in groups.items():
        if len(found) >= 2:
            members = sorted(found, key=lambda n: (rank.get(n, len(rank)), n))
            out[_jury_name(parent, tier, root)] = (members, tier)
    return out


def _jury_name(parent: str, tier: str | None, root: str) -> str:
    if tier is None:
        return parent or root
    return f"{parent}/{tier}" if parent else tier


# ----------------------------------------------------------------------------- statistics
def _rating_key(value: Rating) -> str:
    """How a label or number is shown as a ``confusion`` key (integral numbers without .0)."""
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class _Pairs:
    """(human, judge) rating pairs of one judge, counted."""

    __slots__ = ("abstained", "numeric_only", "pairs")

    def __init__(self) -> None:
        self.pairs: Counter[tuple[Rating, Rating]] = Counter()
        self.abstained = {"abstain": 0, "error": 0}
        self.numeric_only = True

    def add(self, human: Human, item: _Item, count: int) -> None:
        _, _, status, label, score = item
        if status in _ABSTAINED:
            self.abstained[status] += count
            return
        if isinstance(human, str):
            self.numeric_only = False
        self.pairs[(human, compared_as(human, status, label, score))] += count

    def summary(self, labelled: int) -> AgreementSummary:
        n = sum(self.pairs.values())
        matches = sum(c for (h, j), c in self.pairs.items() if h == j)
        level: Literal["nominal", "interval"] = "interval" if self.numeric_only else "nominal"
        confusion: dict[str, dict[str, int]] = {}
        for (h, j), c in sorted(self.pairs.items(), key=lambda kv: _sort_key(kv[0])):
            row = confusion.setdefault(_rating_key(h), {})
            row[_rating_key(j)] = row.get(_rating_key(j), 0) + c
        undefined: dict[str, str] = {}
        human, judge = _expand(self.pairs)
        kappa = _coefficient(
            "cohen_kappa", undefined, [*human, *judge], lambda: cohen_kappa(human, judge)
        )
        alpha = _coefficient(
            "krippendorff_alpha",
            undefined,
            [*human, *judge],
            lambda: krippendorff_alpha([human, judge], level=level),
        )
        return AgreementSummary(
            n=n,
            accuracy=matches / n if n else None,
            accuracy_ci95=wilson_interval(matches, n) if n else None,
            cohen_kappa=kappa,
            krippendorff_alpha=alpha,
            level=level,
            confusion=confusion,
            abstained=dict(self.abstained),
            not_judged=labelled - n - sum(self.abstained.values()),
            labelled=labelled,
            undefined=undefined,
        )


def _sort_key(pair: tuple[Rating, Rating]) -> tuple[str, str]:
    return (_rating_key(pair[0]), _rating_key(pair[1]))


def _expand(pairs: Counter[tuple[Rating, Rating]]) -> tuple[list[Rating], list[Rating]]:
    human: list[Rating] = []
    judge: list[Rating] = []
    for (h, j), count in pairs.items():
        human += [h] * count
        judge += [j] * count
    return human, judge


def _coefficient(
    name: str, undefined: dict[str, str], values: Sequence[object], compute: Any
) -> float | None:
    """``compute()``, or None with the reason in ``undefined`` (no data, one label only)."""
    if not values:
        undefined[name] = "no case to compare (n = 0)"
        return None
    distinct = set(values)
    if len(distinct) < 2:
        (only,) = distinct
        shown = _rating_key(only) if isinstance(only, str | int | float) else repr(only)
        undefined[name] = (
            f"every rating is {shown!r} (a single label): chance agreement is 1, so the "
            "coefficient is undefined (0/0)"
        )
        return None
    try:
        value: float = compute()
    except ValueError as exc:
        undefined[name] = str(exc)
        return None
    return value


def _inter_judge_summary(
    members: list[str], table: Counter[tuple[str | None, ...]], scale: Scale, reason: str
) -> InterJudgeSummary:
    undefined: dict[str, str] = {}
    complete = [ratings for ratings, c in table.items() for _ in range(c) if None not in ratings]
    fleiss = _coefficient(
        "fleiss_kappa",
        undefined,
        [r for ratings in complete for r in ratings],
        lambda: fleiss_kappa(complete),
    )
    rows = [ratings for ratings, c in table.items() for _ in range(c)]
    pairable = [ratings for ratings in rows if sum(r is not None for r in ratings) >= 2]
    by_rater = [[ratings[i] for ratings in pairable] for i in range(len(members))]
    alpha = _coefficient(
        "krippendorff_alpha",
        undefined,
        [r for ratings in pairable for r in ratings if r is not None],
        lambda: krippendorff_alpha(by_rater, level="nominal"),
    )
    return InterJudgeSummary(
        n=len(complete),
        fleiss_kappa=fleiss,
        krippendorff_alpha=alpha,
        alpha_n=len(pairable),
        pairwise=_pairwise(members, table),
        undefined=undefined,
        scale=scale,
        scale_reason=reason,
    )


def _pairwise(
    members: list[str], table: Counter[tuple[str | None, ...]]
) -> dict[str, dict[str, PairAgreement]]:
    out: dict[str, dict[str, PairAgreement]] = {}
    for (i, a), (j, b) in itertools.combinations(enumerate(members), 2):
        n = same = 0
        for ratings, count in table.items():
            if ratings[i] is not None and ratings[j] is not None:
                n += count
                same += count if ratings[i] == ratings[j] else 0
        out.setdefault(a, {})[b] = PairAgreement(
            n=n,
            agreement=same / n if n else None,
            agreement_ci95=wilson_interval(same, n) if n else None,
        )
    return out
