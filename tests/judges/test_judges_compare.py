from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentjudge.core import Context, Judgment, Status
from agentjudge.judges import (
    FileComparison,
    _compare_java,
    compare_contents,
    normalize_requirement,
)
from agentjudge.judges._compare import comparator_for


def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)
    return root


async def judge_dirs(
    tmp_path: Path, expected: dict[str, str | bytes], actual: dict[str, str | bytes]
) -> Judgment:
    ref = tree(tmp_path / "ref", expected)
    ws = tree(tmp_path / "ws", actual)
    return await FileComparison()(Context(workspace=ws, metadata={"expected_dir": str(ref)}))


def diffs(name: str, expected: str | bytes, actual: str | bytes) -> list[str]:
    e = expected.encode() if isinstance(expected, str) else expected
    a = actual.encode() if isinstance(actual, str) else actual
    return compare_contents(name, e, a)


# ----------------------------------------------------------------------------- dispatch
def test_dispatch_by_file_name() -> None:
    """pom.xml is matched exactly; other names dispatch by suffix; the rest is text."""
    assert comparator_for("a/pom.xml")[0] == "pom"
    assert comparator_for("mypom.xml")[0] == "xml"
    assert comparator_for("pyproject.toml")[0] == "pyproject"
    assert comparator_for("cfg/ruff.toml")[0] == "toml"
    assert comparator_for("requirements-dev.txt")[0] == "requirements"
    assert comparator_for("x.JSON")[0] == "json"
    assert comparator_for("m.py")[0] == "python"
    assert comparator_for("A.java")[0] == "java"
    assert comparator_for("README")[0] == "text"


# ----------------------------------------------------------------------------- JSON
def test_json_structural_equality_and_paths() -> None:
    """Key order and formatting are ignored; the path of each difference is reported."""
    assert diffs("a.json", '{"a": 1, "b": [1, 2]}', '{ "b":[1,2],\n "a":1.0 }') == []
    found = diffs("a.json", '{"a": {"b": [1, true, "x"]}}', '{"a": {"b": [1, 1, "y"], "c": 2}}')
    assert found == [
        "$.a.b[1]: expected bool 'true', got int '1'",
        "$.a.b[2]: expected 'x', got 'y'",
        "$.a.c: unexpected '2'",
    ]
    assert diffs("a.json", "[1, 2]", "[1]") == ["$: expected 2 items, got 1"]


# ----------------------------------------------------------------------------- requirements
@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("Requests >= 2.0, <3", "requests<3,>=2.0"),
        ("My_Package.Name", "my-package-name"),
        ("foo[B, a]", "Foo[a,b]"),
        ("bar; python_version < '3.11'", 'bar ; python_version<"3.11"'),
        ("Django (>=3.2)", "django>=3.2"),
        ("pkg @ https://example.com/p.whl", "PKG@ https://example.com/p.whl"),
    ],
)
def test_requirement_normalisation(left: str, right: str) -> None:
    """Equivalent spellings of a requirement normalise to the same string."""
    assert normalize_requirement(left) == normalize_requirement(right)


def test_requirement_normalisation_keeps_real_differences() -> None:
    """Different versions or markers stay different."""
    assert normalize_requirement("a>=1") != normalize_requirement("a>=2")
    assert normalize_requirement("a; os_name=='nt'") != normalize_requirement("a; os_name=='posix'")


PYPROJECT = """[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"

[project]
name = "Demo_Pkg"
version = "1.0"
dependencies = ["httpx>=0.27", "anyio >= 4"]

[project.optional-dependencies]
Dev = ["pytest>=8", "ruff"]

[tool.ruff]
line-length = 100
"""


def test_pyproject_requirements_are_sets() -> None:
    """Reordered and respelled requirements match; real changes are named per table."""
    same = PYPROJECT.replace(
        '["httpx>=0.27", "anyio >= 4"]', '["AnyIO>=4", "httpx >=0.27"]'
    ).replace('Dev = ["pytest>=8", "ruff"]', 'dev = ["ruff", "pytest >= 8"]')
    assert diffs("pyproject.toml", PYPROJECT, same) == []
    changed = PYPROJECT.replace('"httpx>=0.27"', '"httpx>=0.28"').replace("100", "120")
    assert diffs("pyproject.toml", PYPROJECT, changed) == [
        "project.dependencies: missing 'httpx>=0.27'",
        "project.dependencies: unexpected 'httpx>=0.28'",
        "$.tool.ruff.line-length: expected 100, got 120",
    ]


def test_requirements_txt() -> None:
    """requirements files compare as sets, ignoring comments and order."""
    assert diffs("requirements.txt", "b==1\n# c\nA>=2  # why\n", "a >= 2\nb==1\n") == []
    assert diffs("requirements.txt", "a\n", "a\nb\n") == ["requirements: unexpected 'b'"]


def test_toml_structural() -> None:
    """Generic TOML compares tables order-insensitively."""
    assert diffs("x.toml", "[a]\nb = 1\nc = 2\n", "[a]\nc = 2\nb = 1\n") == []
    assert diffs("x.toml", "a = 1\n", "a = 'x'\n") == ["$.a: expected int '1', got str 'x'"]


# ----------------------------------------------------------------------------- XML
def test_xml_grouping_rules() -> None:
    """Attribute order and the order of different tags are ignored; same tags are positional."""
    expected = '<r a="1" b="2"><x>1</x><y/><x> 2 </x></r>'
    assert diffs("a.xml", expected, '<r b="2" a="1"><y/><x>1</x><x>2</x></r>') == []
    assert diffs("a.xml", expected, '<r a="1" b="2"><x>2</x><y/><x>1</x></r>') == [
        "/r/x[1]: text expected '1', got '2'",
        "/r/x[2]: text expected '2', got '1'",
    ]
    assert diffs("a.xml", expected, '<r a="1"><x>1</x></r>') == [
        "/r/@b: missing (expected '2')",
        "/r/x: expected 2 elements, got 1",
        "/r/y: missing",
    ]


POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent><groupId>org.springframework.boot</groupId>
    <artifactId>spring-boot-starter-parent</artifactId><version>3.2.0</version></parent>
  <groupId>com.example</groupId>
  <artifactId>demo</artifactId>
  <version>1.0.0</version>
  <properties><java.version>17</java.version><x>1</x></properties>
  <dependencies>
    <dependency><groupId>org.a</groupId><artifactId>a</artifactId><version>1.0</version></dependency>
    <dependency><groupId>org.b</groupId><artifactId>b</artifactId><scope>test</scope></dependency>
  </dependencies>
  <build><plugins>
    <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.11.0</version>
      <configuration><release>17</release></configuration></plugin>
  </plugins></build>
</project>
"""


def test_pom_semantics() -> None:
    """Dependencies compare as coordinate sets; properties, plugins and parent are compared."""
    reordered = POM.replace(
        "<dependency><groupId>org.a</groupId><artifactId>a</artifactId><version>1.0</version>"
        "</dependency>",
        "",
    ).replace(
        "</dependencies>",
        "<dependency><artifactId>a</artifactId><groupId>org.a</groupId><version>1.0</version>"
        "</dependency></dependencies>",
    )
    assert diffs("pom.xml", POM, reordered) == []
    migrated = (
        POM.replace("<java.version>17</java.version>", "<java.version>21</java.version>")
        .replace("<version>1.0</version>", "<version>2.0</version>")
        .replace("<release>17</release>", "<release>21</release>")
        .replace("3.2.0", "3.3.0")
        .replace("<scope>test</scope>", "")
    )
    assert diffs("pom.xml", POM, migrated) == [
        "parent: expected 'org.springframework.boot:spring-boot-starter-parent:3.2.0', "
        "got 'org.springframework.boot:spring-boot-starter-parent:3.3.0'",
        "properties: java.version expected '17', got '21'",
        "dependencies: org.a:a expected org.a:a:1.0, got org.a:a:2.0",
        "dependencies: org.b:b expected org.b:b (test), got org.b:b",
        "build: plugin org.apache.maven.plugins:maven-compiler-plugin "
        "/configuration/release: text expected '17', got '21'",
    ]


def test_pom_dependency_count_equal_but_different_is_reported() -> None:
    """Same number of dependencies with different coordinates is a difference (not count-only)."""
    swapped = POM.replace(
        "<groupId>org.b</groupId><artifactId>b</artifactId>",
        "<groupId>org.c</groupId><artifactId>c</artifactId>",
    )
    found = diffs("pom.xml", POM, swapped)
    assert "dependencies: missing org.b:b (test)" in found
    assert "dependencies: unexpected org.c:c (test)" in found


# ----------------------------------------------------------------------------- Python
PY = '''"""Module."""
import os
from typing import Any


def add(a: int, b: int) -> int:
    # adds
    return a + b


class Box:
    size = 1

    def grow(self) -> None:
        self.size += 1
'''


def test_python_ignores_formatting_comments_and_order() -> None:
    """Reordered definitions, imports and formatting changes still match."""
    other = '''"""Module."""
from typing import Any
import os
class Box:
    def grow(self)->None:
        self.size+=1   # grow
    size=1
def add(a:int,b:int)->int:
    return (a +
            b)
'''
    assert diffs("m.py", PY, other) == []


def test_python_differences_are_named() -> None:
    """Signature, body, import and missing definitions are reported by name."""
    other = PY.replace("import os\n", "import sys\n").replace("return a + b", "return a - b")
    other = other.replace("def grow(self) -> None:", "def grow(self, by: int = 1) -> None:")
    assert diffs("m.py", PY, other) == [
        "missing import os",
        "function add / statement 1 differs: expected 'return a + b', got 'return a - b'",
        "method Box.grow differs: expected 'def grow(self) -> None', "
        "got 'def grow(self, by: int=1) -> None'",
        "unexpected import sys",
    ]


# ----------------------------------------------------------------------------- Java
JAVA = """package com.example;

import java.util.List;
import static java.util.Objects.requireNonNull;

/** Greets. */
@Deprecated
public final class Greeter implements Comparable<Greeter>, java.io.Serializable {
    private static final String PREFIX = "Hello, "; // greeting
    private final List<String> names;

    public Greeter(List<String> names) {
        this.names = requireNonNull(names);
    }

    @Override
    public int compareTo(Greeter other) {
        return Integer.compare(names.size(), other.names.size());
    }

    public String greet(String name, int... times) throws IllegalStateException {
        String text = PREFIX + name;
        return text;
    }

    enum Mood { HAPPY, SAD }
}
"""


def test_java_ignores_formatting_comments_and_member_order() -> None:
    """Member order, comments, modifier order and whitespace are ignored."""
    other = """package com.example;
import static java.util.Objects.requireNonNull;
import java.util.List;
final @Deprecated public class Greeter implements java.io.Serializable, Comparable<Greeter> {
    enum Mood { HAPPY, SAD }
    public String greet(String name, int ... times) throws IllegalStateException
    {
        String text = PREFIX+name; /* same */
        return text;
    }
    private final List<String> names;
    private static final String PREFIX = "Hello, ";
    @Override public int compareTo(Greeter other) {
      return Integer.compare(names.size(),
                             other.names.size()); }
    public Greeter(List<String> names) { this.names = requireNonNull(names); }
}
"""
    assert diffs("Greeter.java", JAVA, other) == []


def test_java_differences_are_named() -> None:
    """Changed statements, constructor bodies, enum constants and signatures are reported."""
    other = (
        JAVA.replace('"Hello, "', '"Hi, "')
        .replace("requireNonNull(names)", "names")
        .replace("HAPPY, SAD", "HAPPY")
        .replace("greet(String name, int... times)", "greet(String name)")
        .replace("import java.util.List;", "import java.util.*;")
    )
    found = diffs("Greeter.java", JAVA, other)
    assert "missing import java.util.List" in found
    assert "unexpected import java.util.*" in found
    assert any(d.startswith("field Greeter.PREFIX differs") and '"Hi, "' in d for d in found)
    assert any(
        d.startswith("constructor Greeter.Greeter(List<String>) / statement 1") for d in found
    )
    assert "missing enum constant Greeter.Mood.SAD" in found
    assert "missing method Greeter.greet(String,int...)" in found
    assert "unexpected method Greeter.greet(String)" in found


def test_java_without_extra_raises_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without tree-sitter-java the comparator raises ImportError naming the java extra."""
    monkeypatch.setattr(_compare_java, "_JAVA_PARSER", None)
    monkeypatch.setitem(sys.modules, "tree_sitter_java", None)
    with pytest.raises(ImportError, match=r"agentjudge\[java\]"):
        diffs("A.java", "class A {}", "class A {}")


# ----------------------------------------------------------------------------- text
def test_text_whitespace_normalised_with_short_diff() -> None:
    """Whitespace differences match; other changes show a short line diff."""
    assert diffs("notes.md", "a  b\n\nc\n", "a b c") == []
    (found,) = diffs("notes.md", "one\ntwo\nthree\n", "one\n2\nthree\n")
    assert "-two" in found and "+2" in found
    assert diffs("logo.png", b"\x89PNG\x00\x01", b"\x89PNG\x00\x02") == [
        "binary content differs at byte 5"
    ]


# ----------------------------------------------------------------------------- the judge
async def test_file_comparison_passes_for_equivalent_project(tmp_path: Path) -> None:
    """Semantically equal files of every type pass with one check per file."""
    result = await judge_dirs(
        tmp_path,
        {"pom.xml": POM, "src/m.py": PY, "cfg.json": '{"a": 1}', "README": "hi  there"},
        {
            "pom.xml": POM,
            "src/m.py": PY + "\n# trailing\n",
            "cfg.json": '{"a":1}',
            "README": "hi there",
        },
    )
    assert result.status is Status.PASS
    assert [c.name for c in result.checks] == ["README", "cfg.json", "pom.xml", "src/m.py"]
    assert result.score == 1.0


async def test_file_comparison_reports_each_file(tmp_path: Path) -> None:
    """Missing files, unparsable actual files and differences are failing checks."""
    result = await judge_dirs(
        tmp_path,
        {"a.json": '{"a": 1}', "b.py": PY, "c.txt": "same", "gone.txt": "x"},
        {"a.json": "{broken", "b.py": PY.replace("a + b", "a * b"), "c.txt": "same"},
    )
    assert result.status is Status.FAIL
    checks = {c.name: c for c in result.checks}
    assert "not valid JSON" in checks["a.json"].message
    assert "a * b" in checks["b.py"].message
    assert checks["c.txt"].passed
    assert checks["gone.txt"].message == "Missing file: gone.txt"
    assert result.score == 0.25
    assert "3 of 4 files differ" in result.reasoning


async def test_file_comparison_broken_reference_is_error(tmp_path: Path) -> None:
    """A reference file that does not parse is ERROR naming the file."""
    result = await judge_dirs(tmp_path, {"x.py": "def (:\n"}, {"x.py": "pass\n"})
    assert result.status is Status.ERROR
    assert "x.py" in result.reasoning and "not valid Python" in result.reasoning


async def test_file_comparison_refuses_xml_bomb(tmp_path: Path) -> None:
    """An actual XML file with entity declarations is refused with ERROR."""
    bomb = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><r>&b;</r>'
    result = await judge_dirs(tmp_path, {"data.xml": "<r>aaaa</r>"}, {"data.xml": bomb})
    assert result.status is Status.ERROR
    assert "unsafe" in result.reasoning and "data.xml" in result.reasoning


async def test_file_comparison_abstains_without_reference(tmp_path: Path) -> None:
    """No expected_dir (or a non-path value) is ABSTAIN, never a crash."""
    assert (await FileComparison()(Context(workspace=tmp_path))).status is Status.ABSTAIN
    wrong_type = await FileComparison()(Context(workspace=tmp_path, metadata={"expected_dir": 3}))
    assert wrong_type.status is Status.ABSTAIN
    missing = await FileComparison()(
        Context(workspace=tmp_path, metadata={"expected_dir": str(tmp_path / "none")})
    )
    assert missing.status is Status.ABSTAIN


async def test_file_comparison_java_without_extra_is_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Comparing .java files without the java extra is ERROR naming the extra."""
    monkeypatch.setattr(_compare_java, "_JAVA_PARSER", None)
    monkeypatch.setitem(sys.modules, "tree_sitter_java", None)
    result = await judge_dirs(tmp_path, {"A.java": "class A {}"}, {"A.java": "class A {}"})
    assert result.status is Status.ERROR
    assert "agentjudge[java]" in result.reasoning
