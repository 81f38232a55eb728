"""The README's "From Python" example, run as written."""

import re

from conftest import README


def python_example() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## From Python")
    section = text[start:]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m, "README's From Python section has no ```python block"
    return m.group(1)


def test_readme_python_example_runs(capsys):
    code = python_example()
    exec(compile(code, "README.md (From Python)", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert "doc-1" in out
