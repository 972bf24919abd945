"""Cohen's kappa, Fleiss' kappa and Krippendorff's alpha against published examples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentjudge.agreement import LEVELS, cohen_kappa, fleiss_kappa, krippendorff_alpha

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
# Wikipedia's "A computational example" (3 coders, 15 units).
WIKIPEDIA_ALPHA = [
    [None, None, None, None, None, 3, 4, 1, 2, 1, 1, 3, 3, None, 3],
    [1, None, 2, 1, 3, 3, 4, 3, None, None, None, None, None, None, None],
    [None, None, 2, 1, 3, 4, 4, None, 2, 1, 1, 3, 3, None, 4],
]
# Fleiss (1971) as on Wikipedia: 10 subjects, 14 raters, counts per category 1..5.
FLEISS_1971 = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _table(yes_yes: int, yes_no: int, no_yes: int, no_no: int) -> tuple[list[str], list[str]]:
    """Two raters' labels from a 2x2 table (rows: rater A, columns: rater B)."""
    a = ["yes"] * (yes_yes + yes_no) + ["no"] * (no_yes + no_no)
    b = ["yes"] * yes_yes + ["no"] * yes_no + ["yes"] * no_yes + ["no"] * no_no
    return a, b


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        ((20, 5, 10, 15), 0.4),  # p_o 0.70, p_e 0.50
        ((45, 15, 25, 15), 0.1304),  # p_o 0.60, p_e 0.54
        ((25, 35, 5, 35), 0.2593),  # p_o 0.60, p_e 0.46
    ],
)
def test_cohen_matches_classic_two_by_two_tables(
    cells: tuple[int, int, int, int], expected: float
) -> None:
    """Cohen's kappa of the textbook 2x2 tables equals the hand-computed value."""
    assert round(cohen_kappa(*_table(*cells)), 4) == expected


def test_cohen_degenerate_and_extremes() -> None:
    """One shared label gives 1.0, perfect disagreement on two balanced labels gives -1.0."""
    assert cohen_kappa(["x"] * 5, ["x"] * 5) == 1.0
    assert cohen_kappa(["a", "b", "a", "b"], ["b", "a", "b", "a"]) == -1.0
    assert cohen_kappa(["a"] * 4, ["a", "a", "a", "b"]) == 0.0


def test_fleiss_matches_the_1971_example() -> None:
    """Fleiss' kappa of the 10 x 14 example is 0.210 (P_bar 0.378, P_e 0.213)."""
    items = [[cat for cat, count in enumerate(row) for _ in range(count)] for row in FLEISS_1971]
    assert round(fleiss_kappa(items), 3) == 0.210


def test_fleiss_degenerate_is_one() -> None:
    """Every rating being the same label gives 1.0, never NaN."""
    assert fleiss_kappa([["ok", "ok"], ["ok", "ok"]]) == 1.0


@pytest.mark.parametrize(
    ("level", "expected"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_alpha_matches_krippendorff_2011(level: str, expected: float) -> None:
    """Alpha of Krippendorff's own worked example (missing values) matches his numbers."""
    assert round(krippendorff_alpha(KRIPPENDORFF_2011, level=level), 3) == expected


def test_alpha_matches_the_wikipedia_example() -> None:
    """The 3 x 15 example gives nominal 0.691358 and interval 0.810845."""
    assert round(krippendorff_alpha(WIKIPEDIA_ALPHA), 6) == 0.691358
    assert round(krippendorff_alpha(WIKIPEDIA_ALPHA, level="interval"), 6) == 0.810845


def test_alpha_nominal_accepts_string_labels() -> None:
    """Nominal alpha works on any hashable labels (0.722222 on this small example)."""
    data: list[list[str | None]] = [
        ["pos", "neg", "neu", None],
        ["pos", "neg", "neu", "pos"],
        ["pos", "neg", "pos", "pos"],
    ]
    assert round(krippendorff_alpha(data), 6) == 0.722222


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_without_variation_is_one(level: str) -> None:
    """A single value everywhere (D_e = 0) gives 1.0 on every level, never NaN."""
    assert krippendorff_alpha([[2, 2, None], [2, 2, 2]], level=level) == 1.0


def test_alpha_ratio_accepts_zero() -> None:
    """Zeros are valid ratio values (0/0 only arises for equal values, whose delta is 0)."""
    assert krippendorff_alpha([[0, 1, 2], [0, 1, 2]], level="ratio") == 1.0


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: cohen_kappa(["a"], ["a", "b"]), r"len\(a\)=1, len\(b\)=2"),
        (lambda: cohen_kappa([], []), "at least 1 item"),
        (lambda: cohen_kappa("ab", "ab"), "a must be a sequence"),
        (lambda: cohen_kappa(["a", None], ["a", "b"]), r"a\[1\] is None"),
        (lambda: cohen_kappa([["x"]], [["x"]]), r"a\[0\] must be a hashable"),  # type: ignore[list-item]
        (lambda: fleiss_kappa([]), "at least 1 item"),
        (lambda: fleiss_kappa([["a"], ["b"]]), ">= 2 ratings per item"),
        (lambda: fleiss_kappa([["a", "b"], ["a", "b", "c"]]), r"ratings\[1\] has 3"),
        (lambda: fleiss_kappa([["a", "b"], ["a", float("nan")]]), r"ratings\[1\]\[1\] is nan"),
        (lambda: krippendorff_alpha([[1, 2]], level="binary"), "level must be one of"),
        (lambda: krippendorff_alpha([[1, 2], [1]]), r"ratings\[1\] has 1"),
        (lambda: krippendorff_alpha([]), "at least 1 rater"),
        (lambda: krippendorff_alpha([[], []]), "at least 1 item"),
        (lambda: krippendorff_alpha([[1, None], [None, 2]]), "no item was rated twice"),
        (lambda: krippendorff_alpha([[1, float("nan")], [1, 2]]), "write None"),
        (lambda: krippendorff_alpha([["lo"], ["hi"]], level="ordinal"), "ranks"),
        (lambda: krippendorff_alpha([[True], [False]], level="interval"), "must be a number"),
        (lambda: krippendorff_alpha([[-1, 1], [1, 1]], level="ratio"), ">= 0"),
        (lambda: krippendorff_alpha([[float("inf")], [1]], level="interval"), "finite"),
    ],
)
def test_bad_input_is_a_value_error(call: object, fragment: str) -> None:
    """Bad shapes, lengths, levels and values raise ValueError naming what is wrong."""
    with pytest.raises(ValueError, match=fragment):
        call()  # type: ignore[operator]


# Labels (a, b, c, d) and cells are decoded from one drawn byte string: one draw per list
# rather than one per label, which made drawing most of these tests' time. Sizes are drawn
# beside a string long enough for the largest, of which the first bytes are read: one strategy
# for every size, where a flatmap made and checked a new one at every draw.


def _labels(raw: bytes) -> list[str]:
    return ["abcd"[x % 4] for x in raw]


# Two raters' labels of 1 to 40 items: each from its own 40 bytes.
PAIRS = st.tuples(st.integers(1, 40), st.binary(min_size=80, max_size=80)).map(
    lambda d: (_labels(d[1][: d[0]]), _labels(d[1][40 : 40 + d[0]]))
)


@settings(max_examples=200, deadline=None)
@given(PAIRS)
def test_cohen_is_symmetric_and_bounded(pair: tuple[list[str], list[str]]) -> None:
    """Swapping the raters does not change kappa, which stays within [-1, 1]."""
    a, b = pair
    kappa = cohen_kappa(a, b)
    assert kappa == pytest.approx(cohen_kappa(b, a))
    assert -1.0 <= kappa <= 1.0


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=40).map(_labels))
def test_perfect_agreement_is_one(labels: list[str]) -> None:
    """Raters who always agree get exactly 1.0 from all three measures."""
    assert cohen_kappa(labels, labels) == 1.0
    assert fleiss_kappa([[x, x, x] for x in labels]) == 1.0
    assert krippendorff_alpha([labels, labels, labels]) == 1.0


# 2 to 4 rows of 1 to 15 cells, row r from bytes 15r on: half the cells missing (None), the
# others 0..4.
MATRIX = st.tuples(st.integers(2, 4), st.integers(1, 15), st.binary(min_size=60, max_size=60)).map(
    lambda d: [
        [None if x < 128 else x % 5 for x in d[2][15 * r : 15 * r + d[1]]] for r in range(d[0])
    ]
)


def _pairable(data: list[list[int | None]]) -> bool:
    return any(sum(row[i] is not None for row in data) >= 2 for i in range(len(data[0])))


@settings(max_examples=200, deadline=None)
@given(MATRIX, st.permutations(["p", "q", "r", "s", "t"]))
def test_alpha_bounded_and_nominal_invariant_under_renaming(
    data: list[list[int | None]], names: list[str]
) -> None:
    """Alpha <= 1 at every level, and renaming labels leaves nominal alpha unchanged."""
    if not _pairable(data):
        return
    for level in LEVELS:
        assert krippendorff_alpha(data, level=level) <= 1.0 + 1e-12
    renamed = [[None if v is None else names[v] for v in row] for row in data]
    assert krippendorff_alpha(renamed) == pytest.approx(krippendorff_alpha(data))


@settings(max_examples=100, deadline=None)
@given(
    # 1 to 20 items rated by 2 to 5 raters, item i from bytes 5i on
    st.tuples(st.integers(2, 5), st.integers(1, 20), st.binary(min_size=100, max_size=100)).map(
        lambda d: [_labels(d[2][5 * i : 5 * i + d[0]]) for i in range(d[1])]
    )
)
def test_fleiss_at_most_one(items: list[list[str]]) -> None:
    """Fleiss' kappa never exceeds 1."""
    assert fleiss_kappa(items) <= 1.0
