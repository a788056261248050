"""Word wrapping as kitsoki's views do it (github.com/muesli/reflow's wordwrap, default settings).

Words break at spaces and after a hyphen; a word longer than the limit stays whole on its own
line; existing newlines are kept; trailing spaces before a break are dropped. Widths count
terminal cells (East Asian wide characters take two). Written from the behaviour, not ported.
"""

from __future__ import annotations

import unicodedata


def cell_width(text: str) -> int:
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def wordwrap(text: str, limit: int) -> str:
    if limit <= 0:
        return text
    out: list[str] = []
    space: list[str] = []
    word: list[str] = []
    line = 0

    def add_space() -> None:
        nonlocal line
        line += len(space)
        out.extend(space)
        space.clear()

    def add_word() -> None:
        nonlocal line
        if word:
            add_space()
            line += cell_width("".join(word))
            out.extend(word)
            word.clear()

    def new_line() -> None:
        nonlocal line
        out.append("\n")
        line = 0
        space.clear()

    for char in text:
        if char == "\n":
            if not word:
                if line + len(space) > limit:
                    line = 0
                else:
                    out.extend(space)
                space.clear()
            add_word()
            new_line()
        elif char.isspace():
            add_word()
            space.append(char)
        elif char == "-":
            add_space()
            add_word()
            out.append(char)
        else:
            word.append(char)
            size = cell_width("".join(word))
            if line + len(space) + size > limit and size < limit:
                new_line()
    add_word()
    return "".join(out)
