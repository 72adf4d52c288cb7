"""Values from the URL or the data, shown as literal text in Markdown (titles, captions, messages).

Streamlit renders the text of `st.markdown`, `st.caption`, `st.info`/`warning`/`error`/`success`, `st.title`,
`st.subheader`, metric labels and expander labels as Markdown: a row id, problem key, title or error message
holding `[a](https://…)` or `![](https://…)` would become a live link or load an image. Every such value goes
through `md` (plain text) or `md_code` (an inline code span) before it is placed in Markdown.
"""

from __future__ import annotations

import re

# CommonMark lets a backslash escape any ASCII punctuation. Escaped: what makes links and images (`[`, `]`, `<`),
# code, emphasis and strikethrough (`` ` ``, `*`, `~`, `_` at a word's edge), math (`$`), tables (`|`), e-mail
# autolinks (`@`), and the marks that start a block at the start of a line (`#`, `>`, `-`, `+`, `=`, `1.`);
# GFM's bare-URL autolinks are broken at `://` and `www.`. Other punctuation stays as it is, so `compile_error`
# or `2025-01-02T00:00:00Z` read the same in the source.
_ALWAYS = re.compile(r"([\\`*\[\]<>$|~@])")
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_START = re.compile(r"^(\s*)([#>+=-])")
_LINE_NUMBER = re.compile(r"^(\s*\d+)([.)])")
_BACKTICKS = re.compile(r"`+")


def _escape_line(line: str) -> str:
    line = _EDGE_UNDERSCORE.sub(r"\\_", _ALWAYS.sub(r"\\\1", line))
    line = re.sub(r"(?i)\bwww\.", lambda m: m.group()[:-1] + "\\.", line.replace("://", "\\://"))
    return _LINE_NUMBER.sub(r"\1\\\2", _LINE_START.sub(r"\1\\\2", line))


def md(value: object) -> str:
    """`value` as Markdown that renders exactly as its text: see above; line breaks kept as breaks."""
    lines = str(value).splitlines() or [""]
    return "  \n".join(_escape_line(line) for line in lines)


def md_code(value: object) -> str:
    """`value` as one inline code span (nothing inside renders), whatever backticks or line breaks it holds."""
    text = " ".join(str(value).splitlines())
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"
