"""Provider rules from a maintained ruleset: gitleaks' default config, vendored and pinned.

`gitleaks.toml` beside this module is gitleaks' `config/gitleaks.toml` at GITLEAKS_VERSION, byte for
byte (GITLEAKS_SHA256; licence in `gitleaks.LICENSE`, MIT). Why gitleaks rather than detect-secrets'
plugins: it is maintained (hundreds of provider rules, new providers every release) where the pinned
detect-secrets on PyPI has ~25 plugins and misses GitLab, Vault, DigitalOcean, Google OAuth and more;
and every gitleaks rule names *keywords*, literals one of which any match contains, so finding the
rules worth running on a text is one Aho-Corasick pass, which keeps a text with no secret nearly free
(the same idea as the package's anchor characters, derived from the ruleset instead of written by hand).
To update: copy the new release's config/gitleaks.toml here, set the two constants below, run
tests/test_redact_ruleset.py (it re-checks the file's digest and every rule's samples).

What is used of each rule: its regex (RE2 syntax, translated by `go_to_python`), `secretGroup`, its
`entropy` floor (Shannon bits per character of the secret, as gitleaks computes it), its allowlists'
`regexes` (on the secret, the match or the line) and `stopwords`, and the global allowlist's. `paths`
allowlists never apply (a transcript's text has no path of its own). Left out on purpose:

- `generic-api-key`: a key-like name, then any 10+ characters. The package's assignment rules do that
  job with the judgement of what is code, a reference or a placeholder (`password=get_password()`),
  plus an entropy check of their own (see assignments.py); gitleaks' version redacts identifiers.
- `pkcs12-file`: a rule on file names only.
- `hashicorp-tf-password`: meant for `.tf` files only (its `path`), its regex takes any quoted value of
  any `password` key; the assignment rules cover passwords everywhere. The other rules gitleaks scopes
  to a kind of file (Kubernetes secrets, nuget.config, Freemius PHP) are specific enough to run on any
  text, since a transcript quotes such files without their names.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

RULES_FILE = Path(__file__).with_name("gitleaks.toml")
LOCAL_RULES_FILE = Path(__file__).with_name("local-rules.toml")  # kinds gitleaks lacks, same format
GITLEAKS_VERSION = "v8.30.1"  # tag commit 83d9cd684c87d95d656c1458ef04895a7f1cbd8e
GITLEAKS_SHA256 = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"
LEFT_OUT = frozenset({"generic-api-key", "pkcs12-file", "hashicorp-tf-password"})


_POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "xdigit": "0-9a-fA-F", "upper": "A-Z",
          "lower": "a-z", "space": r"\s", "word": r"\w", "punct": r"!-/:-@\[-`{-~", "blank": r" \t"}


def go_to_python(pattern: str) -> str:
    """An RE2 pattern as Python `re` reads it the same way.

    RE2 lets a flag group such as `(?i)` stand anywhere: it applies from there to the end of the group
    it is in (across `|`). Python takes such flags only at the very start, so each becomes a scoped
    group `(?i:...)` closed before every `|` and reopened after it, and closed with its group. RE2's
    `\\z` (end of text) is Python's `\\Z`.
    """
    out: list[str] = []
    scopes: list[list[str]] = [[]]  # per open group: the flag sets opened inside it
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            out.append("\\Z" if nxt == "z" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            posix = re.match(r"\[:(\w+):\]", pattern[i:])
            if posix and posix.group(1) in _POSIX:
                out.append(_POSIX[posix.group(1)])
                i += posix.end()
                continue
            in_class = c != "]"
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            for lead in ("^", "]"):
                if pattern[i : i + 1] == lead:
                    out.append(lead)
                    i += 1
            continue
        if c == "(":
            m = re.match(r"\(\?([imsU\-]+)\)", pattern[i:])
            if m and out:
                out.append(f"(?{m.group(1)}:")
                scopes[-1].append(m.group(1))
                i += m.end()
                continue
            scopes.append([])
        elif c == ")":
            out.append(")" * len(scopes.pop()))
        elif c == "|" and scopes[-1]:
            out.append(")" * len(scopes[-1]) + "|" + "".join(f"(?{f}:" for f in scopes[-1]))
            i += 1
            continue
        out.append(c)
        i += 1
    out.append(")" * len(scopes[0]))
    return "".join(out)


# gitleaks' usual end of a token: a quote, a space, `;`, an escaped newline or the end. A transcript
# also ends one with a path separator (a token as a folder of a cwd), JSON and prose punctuation, a
# URL's `@` or `:`, a sentence's full stop, the `…` our cut() leaves, and any backslash (an escaped
# newline or quote, once or twice JSON-encoded: `tok\\n`).
_GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
_OUR_END = r"""(?:[\x60'"\s;/,)\]}>|&@:…\\]|\.(?=\s|$)|$)"""


_AZURE_START = r"""(?:^|[\\'"\x60\s>=:(,)])"""  # azure-ad-client-secret's own ends
_AZURE_END = r"""(?:$|[\\'"\x60\s<),])"""


# gitleaks' keyed rules (`heroku_api_key = "…"`) allow spaces and quotes round the separator; in a
# JSON-encoded text (a run packet's excerpt, a tool input quoted in a tool input) those are escaped.
_KEYED_SPACES = (r"""[\s'"]{0,3}""", r"""(?:[\s'"]|\\[tnr"']){0,3}""")
_KEYED_LEAD = (r"""[\x60'"\s=]{0,5}""", r"""(?:[\x60'"\s=]|\\[tnr"']){0,5}""")


def _adapt(pattern: str) -> str:
    """gitleaks' regex, widened where a transcript's text differs from a file's (see above)."""
    pattern = pattern.replace(*_KEYED_SPACES).replace(*_KEYED_LEAD)
    return (pattern.replace(_GITLEAKS_END, _OUR_END).replace(_AZURE_START, _AZURE_START[:-2] + "/])")
            .replace(_AZURE_END, _AZURE_END[:-2] + r"/;]|\.(?=\s|$))"))


def shannon(s: str) -> float:
    """Bits per character, as gitleaks' `shannonEntropy`."""
    if not s:
        return 0.0
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


@dataclass(frozen=True, slots=True)
class Allow:
    target: str  # "secret" | "match" | "line"
    regexes: tuple[re.Pattern, ...]
    stopwords: tuple[str, ...]
    need_all: bool  # condition = "AND"

    def allows(self, secret: str, match: str, line: str) -> bool:
        s = {"secret": secret, "match": match, "line": line}[self.target]
        checks = []
        if self.regexes:
            checks.append(any(rx.search(s) for rx in self.regexes))
        if self.stopwords:
            low = secret.lower()
            checks.append(any(w in low for w in self.stopwords))
        if not checks:
            return False
        return all(checks) if self.need_all else any(checks)


ALLOWLIST_FIXES = {
    # Meant to let a legacy `s.` token that is all letters (a word) go, but searched (as gitleaks does)
    # it also lets go every `hvs.` token whose first 24 characters after `s.` are letters (0.7% of them):
    # anchored to the whole secret.
    ("vault-service-token", r"s\.[A-Za-z]{24}"): r"^s\.[A-Za-z]{24}$",
}


class Rule:
    """One rule. Its regex, allowlists and reach are compiled on first use: most rules never meet one of
    their keywords in a process's life, and compiling all of them costs a few hundred milliseconds."""

    __slots__ = ("id", "keywords", "entropy", "group", "_spec", "_compiled")

    def __init__(self, spec: dict) -> None:
        self.id: str = spec["id"]
        self.keywords: tuple[str, ...] = tuple(k.lower() for k in spec.get("keywords", ()))
        self.entropy = float(spec.get("entropy", 0.0))
        self.group = int(spec.get("secretGroup", 0))
        self._spec = spec
        self._compiled: tuple | None = None

    def _compile(self) -> tuple:
        try:
            rx = _compile(_adapt(self._spec["regex"]))
            specs = [dict(a, regexes=[ALLOWLIST_FIXES.get((self.id, r), r) for r in a.get("regexes", ())])
                     for a in self._spec.get("allowlists", ())]
            allow = tuple(a for a in (_allowlist(s) for s in specs) if a is not None)
            self._compiled = (rx, allow, _reach(rx), None)
        except re.error as e:  # a construct Python's re lacks: the rule never matches, tests name it
            self._compiled = (_NEVER, (), 0, str(e))
        return self._compiled

    @property
    def rx(self) -> re.Pattern:
        return (self._compiled or self._compile())[0]

    @property
    def allow(self) -> tuple[Allow, ...]:
        return (self._compiled or self._compile())[1]

    @property
    def reach(self) -> int:
        """How far from a keyword a match can end: the regex's widest match, bounded."""
        return (self._compiled or self._compile())[2]

    @property
    def error(self) -> str | None:
        return (self._compiled or self._compile())[3]


_NEVER = re.compile(r"(?!)")


@dataclass(frozen=True, slots=True)
class Ruleset:
    rules: tuple[Rule, ...]
    keywords: tuple[str, ...]  # lowercase, as gitleaks matches them
    rules_by_keyword: tuple[tuple[int, ...], ...]  # keyword index -> rule indices
    always: tuple[int, ...]  # rules without keywords: run on every text that passes the gate
    allow: tuple[Allow, ...]  # the global allowlist
    skipped: tuple[tuple[str, str], ...]  # (rule id, why) for rules left out


def _compile(pattern: str) -> re.Pattern:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "possible nested set": RE2's `[[` is literal
        return re.compile(go_to_python(pattern))


def _allowlist(spec: dict) -> Allow | None:
    if spec.get("paths") and (spec.get("condition", "OR").upper() == "AND" or not (spec.get("regexes") or spec.get("stopwords"))):
        return None  # only a file path could satisfy it
    return Allow(
        target=spec.get("regexTarget", "secret"),
        regexes=tuple(_compile(r) for r in spec.get("regexes", ())),
        stopwords=tuple(w.lower() for w in spec.get("stopwords", ())),
        need_all=spec.get("condition", "OR").upper() == "AND",
    )


_BEFORE = 80
"""A margin around a rule's widest match: a match holds its keyword, or (`airtable pat…`) has it close by.
A rule runs on the text within (its widest match + this margin) of each keyword found."""


def _reach(rx: re.Pattern) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        import sre_parse  # the width of a compiled pattern: only sre_parse tells it

        hi = sre_parse.parse(rx.pattern, rx.flags).getwidth()[1]
    return min(hi, 4096)


def file_digest() -> str:
    import hashlib

    return hashlib.sha256(RULES_FILE.read_bytes()).hexdigest()


@functools.cache
def ruleset() -> Ruleset:
    """The rules, read once per process on first use (the CLI's start-up does not pay for it); each
    rule's regex is compiled when a text first holds one of its keywords."""
    import tomllib

    config = tomllib.loads(RULES_FILE.read_text("utf-8"))
    local = tomllib.loads(LOCAL_RULES_FILE.read_text("utf-8"))
    rules: list[Rule] = []
    skipped: list[tuple[str, str]] = []
    for spec in (*config["rules"], *local["rules"]):
        rid = spec["id"]
        if rid in LEFT_OUT:
            skipped.append((rid, "left out on purpose"))
            continue
        if "regex" not in spec:
            skipped.append((rid, "no regex (a file-name rule)"))
            continue
        rules.append(Rule(spec))
    keywords = sorted({k for r in rules for k in r.keywords})
    index = {k: i for i, k in enumerate(keywords)}
    by_kw: list[list[int]] = [[] for _ in keywords]
    for ri, r in enumerate(rules):
        for k in r.keywords:
            by_kw[index[k]].append(ri)
    glob = config.get("allowlist") or {}
    return Ruleset(
        rules=tuple(rules),
        keywords=tuple(keywords),
        rules_by_keyword=tuple(tuple(x) for x in by_kw),
        always=tuple(i for i, r in enumerate(rules) if not r.keywords),
        allow=tuple(a for a in (_allowlist(glob),) if a is not None) if glob else (),
        skipped=tuple(skipped),
    )


@functools.cache
def prefix_keywords() -> tuple[str, ...]:
    """Keywords of 4+ characters that start their rule's token (`glpat-`, `hvs.`): a token cut short
    that begins with one is that rule's (redact._cut_token)."""
    out = set()
    for rule in ruleset().rules:
        head = re.sub(r"^(?:\\b|\(\?:|\()+", "", rule._spec["regex"].removeprefix("(?i)")).lower()
        out.update(k for k in rule.keywords if len(k) >= 4 and head.startswith(re.escape(k).replace("\\-", "-")))
    return tuple(sorted(out - {"curl", "-----begin"}))  # a command's name; a PEM block (the package's own rule)


@functools.cache
def rule_ids() -> tuple[str, ...]:
    """Every rule id of the file (a placeholder's kind), without compiling anything."""
    return tuple(id for path in (RULES_FILE, LOCAL_RULES_FILE)
                 for id in re.findall(r'(?m)^id = "([^"]+)"$', path.read_text("utf-8")))


def secret_of(rule: Rule, m: re.Match) -> tuple[int, int]:
    """The span of the secret in a match: `secretGroup`, else the first group that matched (gitleaks'
    choice), else all. A first group shorter than 8 characters is a piece of the pattern's structure
    (`([a-z0-9]{4}-){3}` in the Teams webhook), not the secret: then the whole match is redacted."""
    if rule.group:
        return m.span(rule.group)
    for g in range(1, (m.re.groups or 0) + 1):
        if m.group(g):
            s, e = m.span(g)
            return (s, e) if e - s >= 8 else m.span()
    return m.span()


def rule_spans(rule: Rule, text: str, allow: tuple[Allow, ...], start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Spans of `rule`'s secrets in text[start:end] that pass its entropy floor and allowlists."""
    out = []
    for m in rule.rx.finditer(text, start, len(text) if end is None else end):
        s, e = secret_of(rule, m)
        if e <= s:
            continue
        secret = text[s:e]
        if "[REDACTED:" in secret or (rule.entropy and shannon(secret) <= rule.entropy):
            continue
        if rule.allow or allow:
            ls = text.rfind("\n", 0, m.start()) + 1
            le = text.find("\n", m.end())
            line = text[ls : len(text) if le == -1 else le]
            if any(a.allows(secret, m.group(), line) for a in (*rule.allow, *allow)):
                continue
        out.append((s, e))
    return out


# Two-character keywords are in most prose ("tests.", "they", "task"): for them the automaton is not
# asked; a literal-first regex that every match of their rule contains stands in (sre finds its
# literal at memchr speed, and it rarely fires). Used only while the keyword belongs to exactly that
# rule; tests/test_redact_ruleset.py checks each rule's samples pass its gate.
SHORT_GATES = {  # keyword: (its one rule, the gate, a literal every match holds)
    "s.": ("vault-service-token", r"s\.[A-Za-z0-9]{24}", "s."),  # its legacy form: s. and 24 alphanumerics
    "ey": ("jwt", r"ey[A-Za-z0-9]{17}", ".ey"),  # ey…(17+).ey…: its second part is rarer in prose
    "sk": ("twilio-api-key", r"SK[0-9a-fA-F]{32}", "SK"),
    "q~": ("azure-ad-client-secret", r"Q~[A-Za-z0-9_~.\-]{31}", "Q~"),
}


@functools.cache
def _gates() -> tuple[tuple[re.Pattern, int], ...]:
    """(gate, keyword index) for each SHORT_GATES keyword that belongs to its one rule only."""
    rs = ruleset()
    out = []
    for kw, (rid, gate, _) in SHORT_GATES.items():
        if kw in rs.keywords:
            k = rs.keywords.index(kw)
            if [rs.rules[i].id for i in rs.rules_by_keyword[k]] == [rid]:
                out.append((re.compile(gate), k))
    return tuple(out)


@functools.cache
def _automaton():
    """The Aho-Corasick automaton of every keyword the gates do not stand in for, and the keyword
    index of each of its patterns."""
    import ahocorasick_rs  # the keyword pass: one scan for every keyword of every rule

    gated = {k for _, k in _gates()}
    kept = tuple(i for i in range(len(ruleset().keywords)) if i not in gated)
    # a DFA: a few hundred keywords make a small one, and it scans ~1.5x faster than the NFAs
    automaton = ahocorasick_rs.AhoCorasick([ruleset().keywords[i] for i in kept],
                                           implementation=ahocorasick_rs.Implementation.DFA)
    return automaton, kept


_find = None
"""The automaton's find_matches_as_indexes, set on first use with _kept, _gate_list and _always."""
_kept: tuple[int, ...] = ()
_gate_list: tuple = ()
_always = False


def _init() -> None:
    global _find, _kept, _gate_list, _always
    automaton, _kept = _automaton()
    _gate_list = tuple((SHORT_GATES[ruleset().keywords[k]][2], gate.search, gate.finditer, k) for gate, k in _gates())
    _always = bool(ruleset().always)
    _find = automaton.find_matches_as_indexes


def ruleset_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of every secret the ruleset finds in `text`: only the rules one of whose
    keywords the text contains are run (as gitleaks does), on the text near each keyword."""
    if _find is None:
        _init()
    low = text.lower()
    hits = _find(low, overlapping=True)
    found = None
    for literal, search, finditer, k in _gate_list:
        # memchr speed for the literal; the gate's regex only then, its matches only when it has one
        if literal in text and search(text) is not None:
            found = found or []
            found += [(k, m.start(), m.start() + 2) for m in finditer(text)]
    if hits:
        kept = _kept
        found = (found or []) + [(kept[k], ks, ke) for k, ks, ke in hits]
    elif found is None:
        if not _always:
            return []
        found = []
    rs = ruleset()
    n = len(text)
    exact = len(low) == n  # lower() kept every position (it does for ASCII): look only near keywords
    windows: dict[int, list[list[int]]] = {ri: [[0, n]] for ri in rs.always}
    by_kw = rs.rules_by_keyword
    rules = rs.rules
    for k, ks, ke in found:
        for ri in by_kw[k]:
            w = windows.get(ri)
            if w is not None and w[-1][1] >= n:
                continue
            reach = rules[ri].reach + _BEFORE
            lo, hi = (max(0, ks - reach), min(n, ke + reach)) if exact else (0, n)
            if w is None:
                windows[ri] = [[lo, hi]]
            elif lo <= w[-1][1]:
                w[-1][1] = max(w[-1][1], hi)
            else:
                w.append([lo, hi])
    out = []
    for ri in sorted(windows):
        rule = rules[ri]
        for lo, hi in windows[ri]:
            out.extend((s, e, rule.id) for s, e in rule_spans(rule, text, rs.allow, lo, hi))
    return out
