"""A program in a real terminal: tmux runs it, send-keys types, capture-pane reads the screen (as
text for the checks, with its colours for a screenshot rendered by headless Chromium)."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import time
from pathlib import Path

_SGR = re.compile(r"\x1b\[([0-9;]*)m")
_BASIC = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5"]
_BRIGHT = ["#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]


class Tmux:
    def __init__(self, name: str, width: int = 110, height: int = 34) -> None:
        if shutil.which("tmux") is None:
            raise RuntimeError("tmux is not on PATH: `apt-get install tmux` (.ci/run installs it)")
        self.name, self.width, self.height = name, width, height

    def start(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)
        exports = [f"{k}={v}" for k, v in env.items()]
        subprocess.run(["tmux", "-f", "/dev/null", "new-session", "-d", "-s", self.name, "-x", str(self.width),
                        "-y", str(self.height), "-c", str(cwd), "env", *exports, *command], check=True)
        subprocess.run(["tmux", "set-option", "-t", self.name, "status", "off"], check=True)

    def keys(self, *keys: str, literal: bool = False) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *(["-l"] if literal else []), *keys], check=True)

    def type(self, text: str) -> None:
        self.keys(text, literal=True)

    def screen(self, colours: bool = False) -> str:
        done = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name, *(["-e"] if colours else [])],
                              capture_output=True, text=True, check=True)
        return done.stdout

    def wait_for(self, pattern: str, timeout: float = 30, what: str = "") -> str:
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern, re.MULTILINE)
        while time.monotonic() < deadline:
            text = self.screen()
            if regex.search(text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"{what or pattern}: not on screen after {timeout:.0f} s; the screen:\n{self.screen()}")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode == 0

    def stop(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def _colour(params: list[int], i: int) -> tuple[str | None, int]:
    """An extended colour (38;5;N or 38;2;R;G;B) at params[i:], and how many params it used."""
    if params[i] == 5 and i + 1 < len(params):
        n = params[i + 1]
        if n < 8:
            return _BASIC[n], 2
        if n < 16:
            return _BRIGHT[n - 8], 2
        if n < 232:
            n -= 16
            return "#%02x%02x%02x" % tuple((0, 95, 135, 175, 215, 255)[x] for x in (n // 36, n // 6 % 6, n % 6)), 2
        grey = 8 + (n - 232) * 10
        return "#%02x%02x%02x" % (grey, grey, grey), 2
    if params[i] == 2 and i + 3 < len(params):
        return "#%02x%02x%02x" % tuple(params[i + 1:i + 4]), 4
    return None, 1


def ansi_to_html(text: str, title: str) -> str:
    """capture-pane -e output (SGR colours only) as a page that looks like the terminal."""
    out, fg, bg, bold, reverse = [], None, None, False, False
    pos = 0
    for match in _SGR.finditer(text + "\x1b[0m"):
        chunk = text[pos:match.start()]
        if chunk:
            f, b = (bg or "#1e1e1e", fg or "#d4d4d4") if reverse else (fg, bg)
            style = (f"color:{f};" if f else "") + (f"background:{b};" if b else "") + ("font-weight:bold;" if bold else "")
            out.append(f'<span style="{style}">{html.escape(chunk)}</span>' if style else html.escape(chunk))
        pos = match.end()
        params = [int(p) if p else 0 for p in match.group(1).split(";")] if match.group(1) else [0]
        i = 0
        while i < len(params):
            p = params[i]
            if p == 0:
                fg, bg, bold, reverse = None, None, False, False
            elif p == 1:
                bold = True
            elif p == 22:
                bold = False
            elif p == 7:
                reverse = True
            elif p == 27:
                reverse = False
            elif 30 <= p <= 37:
                fg = _BASIC[p - 30]
            elif 90 <= p <= 97:
                fg = _BRIGHT[p - 90]
            elif 40 <= p <= 47:
                bg = _BASIC[p - 40]
            elif 100 <= p <= 107:
                bg = _BRIGHT[p - 100]
            elif p == 39:
                fg = None
            elif p == 49:
                bg = None
            elif p in (38, 48) and i + 1 < len(params):
                colour, used = _colour(params, i + 1)
                if p == 38:
                    fg = colour
                else:
                    bg = colour
                i += used
            i += 1
    body = "".join(out)
    return (f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
            "<style>body{margin:0;background:#1e1e1e}pre{margin:0;padding:10px;color:#d4d4d4;"
            "font:14px/1.25 'DejaVu Sans Mono',monospace;white-space:pre}</style>"
            f"<pre>{body}</pre>")


def screenshot(tmux: Tmux, path: Path, chromium: Path, title: str) -> Path:
    """The terminal as a person sees it, colours included, as a PNG (Chromium renders the page)."""
    page = path.with_suffix(".html")
    page.write_text(ansi_to_html(tmux.screen(colours=True), title))
    width, height = tmux.width * 9 + 24, tmux.height * 18 + 24
    profile = path.parent / f".chromium-{path.stem}"
    subprocess.run([str(chromium), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={profile}", "--hide-scrollbars", f"--window-size={width},{height}",
                    f"--screenshot={path}", page.as_uri()],
                   capture_output=True, timeout=60, check=True)
    shutil.rmtree(profile, ignore_errors=True)
    return path
