"""The agreement part of ``agentjudge report`` and ``agentjudge compare`` (text tables).

Every number is shown with its n; accuracy and pairwise agreement with their 95% Wilson
interval; an undefined coefficient as ``-`` with the reason listed under the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentjudge.harness._agreement import AgreementSummary, InterJudgeSummary, JurySummary
from agentjudge.harness._summary import RunSummary

__all__ = ["CONFUSION_MAX", "agreement_compare_lines", "agreement_lines", "confusion_lines"]

Table = Callable[[Sequence[str], list[list[str]]], str]
CONFUSION_MAX = 12
"""Distinct human labels (or judge values) above which a confusion matrix is not printed (the
HTML report uses the same limit): numeric labels against fractional scores make one row per
value; summary.json keeps the whole matrix."""


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _delta(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{b - a:+.3f}"


def _labelled(summary: RunSummary) -> dict[str, AgreementSummary]:
    out = {name: s.agreement for name, s in summary.judges.items() if s.agreement is not None}
    if summary.verdict is not None and summary.verdict.agreement is not None:
        out["(verdict)"] = summary.verdict.agreement
    return out


def _agreement_row(name: str, a: AgreementSummary) -> list[str]:
    return [
        name,
        str(a.n),
        _num(a.accuracy),
        _ci(a.accuracy_ci95),
        _num(a.cohen_kappa),
        f"{_num(a.krippendorff_alpha)} ({a.level})",
        str(a.abstained.get("abstain", 0)),
        str(a.abstained.get("error", 0)),
        str(a.not_judged),
    ]


def _pairs_text(inter: InterJudgeSummary) -> list[str]:
    return [
        f"    {a} ~ {b}: {_num(p.agreement)} (n {p.n}) {_ci(p.agreement_ci95)}"
        for a, row in inter.pairwise.items()
        for b, p in row.items()
    ]


def _undefined(owner: str, undefined: dict[str, str]) -> list[str]:
    return [f"  {owner}.{stat}: undefined: {why}" for stat, why in undefined.items()]


def _jury_lines(juries: dict[str, JurySummary], table: Table) -> list[str]:
    rows = [
        [
            name,
            ", ".join(jury.members),
            str(jury.inter_judge.n),
            _num(jury.inter_judge.fleiss_kappa),
            str(jury.inter_judge.alpha_n),
            _num(jury.inter_judge.krippendorff_alpha),
            jury.inter_judge.scale,
        ]
        for name, jury in juries.items()
    ]
    lines = [
        "",
        "agreement among jury members (fleiss: cases every member rated; alpha: nominal, "
        "missing ratings allowed; scale: labels or PASS/FAIL status compared):",
        table(
            ["jury", "members", "n", "fleiss_kappa", "alpha n", "krippendorff_alpha", "scale"],
            rows,
        ),
    ]
    for name, jury in juries.items():
        inter = jury.inter_judge
        lines += [f"  {name} compared on {inter.scale}: {inter.scale_reason or '-'}"]
        lines += [f"  {name} pairwise agreement (share of cases both rated; 95% Wilson):"]
        lines += _pairs_text(jury.inter_judge)
        lines += _undefined(name, jury.inter_judge.undefined)
    return lines


def confusion_lines(name: str, a: AgreementSummary, table: Table) -> list[str]:
    """One judge's confusion matrix: rows the human label, columns what the judge said."""
    human = list(a.confusion)
    if not human:
        return []
    said = sorted({j for row in a.confusion.values() for j in row})
    if len(human) > CONFUSION_MAX or len(said) > CONFUSION_MAX:
        return [
            f"  {name}: {len(human)} human labels x {len(said)} judge values, too many to "
            "print (agreement.confusion in summary.json)"
        ]
    rows = [
        [h, *(str(a.confusion[h].get(j, 0)) for j in said), str(sum(a.confusion[h].values()))]
        for h in human
    ]
    text = table(["human \\ judge", *said, "total"], rows)
    return [f"  {name} (n {a.n}):", *(f"    {line}" for line in text.splitlines())]


def agreement_lines(summary: RunSummary, table: Table) -> list[str]:
    """Agreement with human labels (per judge and verdict) and among each jury's members."""
    lines: list[str] = []
    labelled = _labelled(summary)
    if labelled:
        lines += [
            "",
            "agreement with human labels (n: labelled cases judged PASS/FAIL; ci95: Wilson):",
            table(
                [
                    "judge",
                    "n",
                    "accuracy",
                    "ci95",
                    "cohen_kappa",
                    "krippendorff_alpha",
                    "abstain",
                    "error",
                    "not judged",
                ],
                [_agreement_row(name, a) for name, a in labelled.items()],
            ),
        ]
        for name, a in labelled.items():
            lines += _undefined(name, a.undefined)
        matrices = [
            line for name, a in labelled.items() for line in confusion_lines(name, a, table)
        ]
        if matrices:
            lines += [
                "",
                "confusion (rows: human label; columns: the judge's label, status or score as "
                "compared with it; the diagonal agrees):",
                *matrices,
            ]
    if summary.juries:
        lines += _jury_lines(summary.juries, table)
    return lines


def agreement_compare_lines(first: RunSummary, second: RunSummary, table: Table) -> list[str]:
    """How agreement changed from run A to run B (judges, verdict, juries), with both n."""
    a_agree, b_agree = _labelled(first), _labelled(second)
    lines: list[str] = []
    names = list(a_agree) + [n for n in b_agree if n not in a_agree]
    if names:
        rows = []
        for name in names:
            x, y = a_agree.get(name), b_agree.get(name)
            kx, ky = (None if s is None else s.cohen_kappa for s in (x, y))
            ax, ay = (None if s is None else s.accuracy for s in (x, y))
            nx, ny = ("-" if s is None else str(s.n) for s in (x, y))
            rows.append(
                [
                    name,
                    nx,
                    ny,
                    _num(ax),
                    _num(ay),
                    _delta(ax, ay),
                    _num(kx),
                    _num(ky),
                    _delta(kx, ky),
                ]
            )
        lines += [
            "",
            "agreement with human labels (A -> B):",
            table(
                ["judge", "n A", "n B", "acc A", "acc B", "delta", "kappa A", "kappa B", "delta"],
                rows,
            ),
        ]
    juries = list(first.juries) + [n for n in second.juries if n not in first.juries]
    if juries:
        rows = []
        for name in juries:
            x_j, y_j = first.juries.get(name), second.juries.get(name)
            fx, fy = (None if j is None else j.inter_judge.fleiss_kappa for j in (x_j, y_j))
            kx, ky = (None if j is None else j.inter_judge.krippendorff_alpha for j in (x_j, y_j))
            nx, ny = ("-" if j is None else str(j.inter_judge.n) for j in (x_j, y_j))
            rows.append(
                [
                    name,
                    nx,
                    ny,
                    _num(fx),
                    _num(fy),
                    _delta(fx, fy),
                    _num(kx),
                    _num(ky),
                    _delta(kx, ky),
                ]
            )
        lines += [
            "",
            "agreement among jury members (A -> B):",
            table(
                [
                    "jury",
                    "n A",
                    "n B",
                    "fleiss A",
                    "fleiss B",
                    "delta",
                    "alpha A",
                    "alpha B",
                    "delta",
                ],
                rows,
            ),
        ]
    return lines
