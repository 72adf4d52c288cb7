"""Values from the URL or the data, shown as literal text in Markdown (titles, captions, messages).

Streamlit renders the text of `st.markdown`, `st.caption`, `st.info`/`warning`/`error`/`success`, `st.title`,
`st.subheader`, metric labels and expander labels as Markdown: a row id, problem key, title or error message
holding `[a](https://…)` or `![](https://…)` would become a live link or load an image. Every such value goes
through `md` (plain text) or `md_code` (an inline code span) before it is placed in Markdown.
"""

from __future__ import annotations

import re

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones Markdown, GFM (tables,
# strikethrough, autolinks), Streamlit's directives (`:red[…]`) and math (`$…$`) give a meaning.
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$&=])")
_BACKTICKS = re.compile(r"`+")


def md(value: object) -> str:
    """`value` as Markdown that renders exactly as its text: punctuation escaped, line breaks kept as breaks."""
    lines = str(value).splitlines() or [""]
    return "  \n".join(_SPECIAL.sub(r"\\\1", line) for line in lines)


def md_code(value: object) -> str:
    """`value` as one inline code span (nothing inside renders), whatever backticks or line breaks it holds."""
    text = " ".join(str(value).splitlines())
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"
