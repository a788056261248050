"""What a prompt asks for: the person's own words (what a client injected removed), the sentence that asks,
and its request as terms: the kind of request, its verb and the things it acts on.

Two prompts are one ask when they ask the same kind of thing of the same object, whatever words and language
they use: "could you regenerate the api client?", "regen API client pls", "APIクライアントを再生成して" and
"重新生成API客户端" all read as (change: regenerate) the (api, client). Shared identifiers alone never make two
asks one: "explain the api client" is (inquire) the (api, client), another kind of request.

Deterministic and dependency-light: a multilingual developer lexicon (core/mining/lexicon.py), Porter2
stems for English words, scripts told apart by Unicode ranges (Japanese particles end a noun phrase, a
Chinese 把 marks the object), and typos of lexicon words forgiven (one or two edits, rapidfuzz).

Terms (sorted strings, what Episode.stems holds):
- `k:<kind>`: inquire, change, run, ship, review (the kind of the main verb; none for a bare noun phrase);
- `a:<verb>`: each verb concept of the ask;
- `o:<object>`: each thing it acts on (a lexicon concept, an English stem, a CJK word);
- `g:<object>`: a thing too general to tell asks apart (errors, files, code): it weighs little.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

import snowballstemmer
from rapidfuzz import process
from rapidfuzz.distance import OSA

from core.mining import lexicon as lx

# -- what a client put around the person's words ----------------------------------------------------

_SUMMARY_OPENERS = (
    "this session is being continued from a previous conversation",
    "this conversation is being continued from a previous",
    "summary of the previous conversation",
    "another language model started to solve this problem",
    "<summary>",
    "here is a summary of our conversation",
)
"""Compaction summaries (they quote earlier prompts): a client wrote them, not a person."""

# A block a client wraps around context: <ide_opened_file>, <ide_selection>, <skill ...>, <system-reminder>,
# <command-message>, <environment_context>, ... Any tag with _ or - in its name, or a known one.
_KNOWN_TAGS = ("skill", "context", "instructions", "summary", "attachments", "attachment", "file", "selection",
               "diagnostics", "reminder", "env", "environment", "user_instructions", "INSTRUCTIONS", "image")
_TAG_BLOCK = re.compile(r"<((?:[A-Za-z]+[_-][\w-]*)|" + "|".join(_KNOWN_TAGS) + r")\b[^>]*>.*?</\1\s*>", re.S)
_TAG_OPEN_TO_END = re.compile(r"<((?:[A-Za-z]+[_-][\w-]*)|" + "|".join(_KNOWN_TAGS) + r")\b[^>]*>.*\Z", re.S)
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_PASTED_LINE = re.compile(
    r"""^\s*(?:
        Traceback\ \(most\ recent\ call\ last\) | File\ ".*",\ line\ \d+ | at\ [\w.$<>]+\ ?\(.*:\d+(?::\d+)?\) |
        [\w.]*(?:Error|Exception|Warning)\b.*: | \[?\d{4}-\d{2}-\d{2}[T\ ]\d{2}:\d{2} | \d{2}:\d{2}:\d{2}[.,\s] |
        (?:ERROR|WARN|WARNING|INFO|DEBUG|FATAL|TRACE|PANIC|CRITICAL)\b | (?:\$|>>>|>|\#|\+|-{3}|@@|diff\ --git)\s |
        (?:goroutine\ \d+|panic:|npm\ ERR!|error\[E\d+\]|E\s{2,}|FAILED\ |PASSED\ |\d+\ passed|\d+\ failed)
    )""", re.X)
_INDENTED = re.compile(r"^(?: {4,}|\t)")
_LETTERS = re.compile(r"[^\W\d_]", re.U)
_ASCII_LETTERS = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1))


def _letters(text: str) -> int:
    """How many letters _LETTERS finds in `text`; in ASCII text those are A-Z and a-z, counted in C
    (a pasted log's lines are long, and findall built a string per letter)."""
    if text.isascii():
        return len(text) - len(text.encode("ascii").translate(None, _ASCII_LETTERS))
    return len(_LETTERS.findall(text))


_CODEX_REQUEST = "## My request for Codex:"
"""Codex's IDE extension and desktop app put what a person typed after this line, and before it context the
client gathered: "# Context from my IDE setup:" (open tabs, the selection) or "## Prior conversation with
Codex:" (a thread handed over from another surface, quoting its messages as JSON)."""


def own_words(text: str, limit: int | None = None) -> str | None:
    """The person's own words in a prompt: client wrappers, pasted code, logs and stack traces removed.
    None when the whole prompt is something a client wrote (a compaction summary quoting earlier prompts).
    With `limit`, the lines after the first `limit` characters of the words are not looked at: the words
    returned start with those characters and may stop there."""
    if _CODEX_REQUEST in text:
        text = text.rpartition(_CODEX_REQUEST)[2]
    head = text.lstrip()[:120].lower()
    if head.startswith(_SUMMARY_OPENERS):
        return None
    if "<" in text:
        text = _TAG_BLOCK.sub("\n", text)
        text = _TAG_OPEN_TO_END.sub("\n", text)
    if "```" in text:
        text = _FENCE.sub("\n", text)
    kept = []
    held = -1  # the length of the lines kept, joined
    for line in text.splitlines():
        if not line.strip():
            continue
        if _INDENTED.match(line) or _PASTED_LINE.match(line):
            continue
        stripped = line.strip()
        if len(stripped) > 24 and _letters(stripped) < 0.45 * len(stripped):
            continue  # mostly symbols and digits: output, data, a hash
        words = " ".join(stripped.split())
        kept.append(words)
        held += len(words) + 1
        if limit is not None and held >= limit:
            break
    return "\n".join(kept)


# -- scripts -------------------------------------------------------------------------------------------

def _script(ch: str) -> str:
    o = ord(ch)
    if 0x3040 <= o <= 0x309F:
        return "hira"
    if 0x30A0 <= o <= 0x30FF or 0x31F0 <= o <= 0x31FF or o == 0xFF70:
        return "kata"
    if 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF:
        return "han"
    if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F:
        return "hang"
    if ch.isalnum() or ch in "'_+#":
        return "word"
    return "sep"


_SENTENCE = re.compile(r"(?<=[.!?])\s+|[。！？\n]+|(?<=[?!])")
_ENDS_SENTENCE = re.compile(r"[.!?。！？\n]")
_URL = re.compile(r"https?://\S+|www\.\S+")
_PATH = re.compile(r"(?:[\w.~@-]*/)+([\w@-]+)(?:\.[\w-]+)*/?|\b([\w-]+)(?:\.[\w-]+)*\.(?:py|go|ts|tsx|js|jsx|rs|rb|md|ya?ml|json|toml|sh|"
                   r"css|html|txt|lock|cfg|ini|sql|proto|java|kt|swift|c|h|cpp|cs|php)(?![A-Za-z0-9])")
_DOT_LETTER = re.compile(r"\.[a-z]")
"""Where a file name's extension can start: _PATH's second form needs one (the text is lower case)."""
_NOISE = re.compile(r"#\d+|\b[0-9a-f]{7,40}\b|\b\d+(?:[.:]\d+)*[a-z]{0,2}\b|\bv\d+(?:\.\d+)+\b")

_DIGIT_OR_HASH = re.compile(r"[0-9#]")
_UNDERSCORE = re.compile(r"[_']")

_STEMMER = snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word) if word.isascii() and word.isalpha() else word


# -- the lexicon, compiled -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Sense:
    action: str | None = None
    kind: str | None = None
    obj: str | None = None
    generic: bool = False


def _is_cjk(s: str) -> bool:
    return _ANY_CJK.search(s) is not None


class _Lexicon:
    def __init__(self) -> None:
        self.exact: dict[str, _Sense] = {}  # English word as written -> sense
        self.words: dict[str, _Sense] = {}  # English stem -> sense
        self.phrases: dict[tuple[str, ...], _Sense] = {}  # English stems -> sense
        self.prefixes: list[tuple[str, _Sense]] = []
        self.cjk: dict[str, _Sense] = {}
        self.surfaces: list[str] = []  # English words, for typos
        for concept, (kind, forms) in lx.ACTIONS.items():
            for form in forms.split():
                self._add(form, _Sense(action=concept, kind=kind))
        for concept, forms in lx.OBJECTS.items():
            for form in forms.split():
                self._add(form, _Sense(obj=concept))
        # In a fixed order: a general word whose stem another one already gave (part, parts) is not a typo
        # target of its own, so which one is depended on the set's order, which changes with each process's
        # string hashing (the typo "pars" read as parts in some runs and as unknown in others).
        for word in sorted(lx.GENERIC):
            sense = _Sense(obj=word if _is_cjk(word) else _stem(word), generic=True)
            self._add(word, sense, keep=True)
        for filler in lx.CJK_FILLER:
            self.cjk.setdefault(filler, _Sense())
        self.prefixes.sort(key=lambda p: -len(p[0]))
        self.phrase_starts = frozenset(key[0] for key in self.phrases)
        self.cjk_max = max(map(len, self.cjk))
        self.surfaces = sorted(set(self.surfaces))

    def _merge(self, old: _Sense | None, new: _Sense) -> _Sense:
        if old is None:
            return new
        # A word that is both a verb and a noun ("test", "release", "build", "seed") keeps both senses.
        return _Sense(action=old.action or new.action, kind=old.kind or new.kind, obj=old.obj or new.obj,
                      generic=old.generic and new.generic)

    def _add(self, form: str, sense: _Sense, keep: bool = False) -> None:
        if _is_cjk(form):
            self.cjk[form] = self._merge(self.cjk.get(form), sense)
        elif form.endswith("*"):
            self.prefixes.append((form[:-1].replace("-", " "), sense))
        elif "-" in form and not form.startswith("-"):
            parts = tuple(_stem(p) for p in form.split("-") if p)
            self.phrases[parts] = self._merge(self.phrases.get(parts), sense)
            joined = _stem(form.replace("-", ""))
            self.words.setdefault(joined, sense)
        else:
            key = _stem(form)
            self.exact[form] = self._merge(self.exact.get(form), sense) if not keep else self.exact.get(form, sense)
            if keep and key in self.words:
                return
            self.words[key] = self._merge(self.words.get(key), sense)
            if len(form) >= 5 and form.isascii():
                self.surfaces.append(form)

    @functools.lru_cache(maxsize=65536)
    def word(self, word: str) -> _Sense | None:
        found = self.exact.get(word) or self.words.get(_stem(word))
        if found is not None:
            return found
        if not word.isascii():
            for prefix, sense in self.prefixes:
                if word.startswith(prefix) and len(prefix) >= 3:
                    return sense
            return None
        if len(word) >= 4 and word.isalpha() and word not in lx.FILLER:
            # A typo of a word we know: one edit (two for long words), same first letter.
            limit = 1 if len(word) < 10 else 2
            found = [m for m in process.extract(word, self.surfaces, scorer=OSA.distance, score_cutoff=limit, limit=4)
                     if m[0][0] == word[0]]
            best = [m for m in found if m[1] == min((m[1] for m in found), default=0)]
            senses = {self.words.get(_stem(m[0])) for m in best}
            if len(senses) == 1:  # one word it can be a typo of (relase: release or rebase? neither)
                return senses.pop()
        return None


@functools.lru_cache(maxsize=1)
def _lexicon() -> _Lexicon:
    return _Lexicon()


def lexicon_ready() -> None:
    """Compile the lexicon now (a mining pass does it before it forks its workers, so each inherits it)."""
    _lexicon()


# -- understanding an ask ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Understood:
    phrasing: str
    """The ask, short and normalized: what a recipe shows and a draft may use as an example."""
    terms: tuple[str, ...]
    """Sorted k:/a:/o:/g: terms (see the module doc); empty when the prompt asks nothing of its own."""


_NOTHING = Understood("", ())
ASK_CHARS = 400
"""How much of a person's words can hold their ask: what comes after is context."""

# Japanese postpositions after a noun that make it a circumstance (source, place, topic of a comparison),
# not what is acted on.
_JA_CIRCUMSTANCE = ("から", "で", "に", "へ", "まで", "より", "について", "として", "用に", "ため")
_JA_JOIN = ("の", "と", "や")
_ZH_CIRCUMSTANCE_BEFORE = ("根据", "按照", "从", "在", "用", "通过", "给")

_CJK_LEAD = re.compile(r"^(?:すみません|すいません|お願いします|ちょっと|あの|えっと|请|麻烦|帮我|帮忙|现在|那个)[、,，。\s]*")
_CJK_POLITE_END = re.compile(r"(?:してください|ください|下さい|してもらえますか|もらえますか|いただけますか|してほしい|ほしい|"
                             r"しておいて|おいて|お願いします|お願い|，?谢谢|一下|吧|了)[？?！!。.]*$")
_EN_LEAD = re.compile(r"^(?:(?:hey|hi|hello|ok|okay|alright|so|now|then|please|pls|plz|quick(?:ly)?|btw|also|and)\b[\s,!.:-]*)+")
_EN_ASKING = re.compile(r"^(?:would you mind(?: to)?|(?:can|could|would|will) you(?: please)?|i'?d like you to|i want you to|"
                        r"i need you to|we need to|you need to|need to|let'?s|time to|go ahead and|please)\b\s*")
_EN_TAIL = re.compile(r"[\s,]*(?:\b(?:pls|plz|please|thanks|thank you|thx|again|now|asap|for me|when you get a chance|"
                      r"when you can|if you can)\b[\s,.!]*)+$|[\s,.!?]+$")

_TAIL_ENDS = ("pls", "plz", "please", "thanks", "thank you", "thx", "again", "now", "asap", "for me", "when you get a chance",
              "when you can", "if you can", ",", ".", "!", "?")
"""How a text that _EN_TAIL can match ends (its words, or a separator; whitespace is asked apart): every match
runs to the end, so a text that ends otherwise is not scanned (sre tries the pattern at each position)."""


def _drop_tail(text: str) -> str:
    if text.endswith(_TAIL_ENDS) or text[-1:].isspace():
        return _EN_TAIL.sub("", text)
    return text


def understand(prompt: str) -> Understood:
    words = own_words(prompt, ASK_CHARS)
    if not words:
        return _NOTHING
    clause = _ask_clause(words[:ASK_CHARS])
    if not clause:
        return _NOTHING
    return _understood(clause)


@functools.lru_cache(maxsize=16384)
def _understood(clause: str) -> Understood:
    items = _items(clause)
    terms = _terms(items, clause)
    if not any(t.startswith("o:") for t in terms):
        return Understood(_short(clause), ())
    return Understood(_short(clause), terms)


def _sentences(words: str):
    """_SENTENCE.split(words), one sentence at a time: the ask is most often in the first."""
    if _ENDS_SENTENCE.search(words) is None:  # _SENTENCE only matches at or after one of these
        yield words
        return
    last = 0
    for m in _SENTENCE.finditer(words):  # the matches split() cuts at (the pattern has no group)
        yield words[last:m.start()]
        last = m.end()
    yield words[last:]


_FOLLOW_UP = re.compile(r"^(?:(?:and|so|ok|okay|then|hmm)[\s,]+)*what about\s+(?!\w+ing\b)[^.?!]{1,40}[?？.]*$"
                        r"|^(?:那|那么|那个)[^，。,.!?！？\s]{1,24}呢[?？。.]*$", re.I)
"""A follow-up that only names the next thing ("what about mona?", "那mona呢"): its request is the one before it,
in the conversation, so on its own it asks nothing (read as an ask it glued other requests by the name)."""


def _ask_clause(words: str) -> str:
    """The first sentence that asks something (names a verb the lexicon knows, or is a question, and is not a
    follow-up that only names the next thing); else the first sentence with words in it."""
    first = ""
    for n, sentence in enumerate(_sentences(words)):
        if n >= 6:
            break
        sentence = sentence.strip(" \t,;:-")[:200]
        if not sentence or _FOLLOW_UP.match(sentence):
            continue
        if not first and _LETTERS.search(sentence):
            first = sentence
        items = _items(sentence)
        if any(i[0] in ("act", "wh") for i in items) or sentence.endswith(("?", "？")):
            return sentence
    return first


_CJK_CHARS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff70"
_RUNS = re.compile(rf"([{_CJK_CHARS}]+)|((?:(?![{_CJK_CHARS}])[\w'+#])+)|((?:(?![{_CJK_CHARS}])[^\w'+#])+)")
_HIRAGANA = re.compile("[\u3040-\u309f]")
_ANY_CJK = re.compile(f"[{_CJK_CHARS}]")
_KANA_HAN = re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


_ASCII_RUNS = re.compile(r"([\w'+#]+)|([^\w'+#]+)")
"""_RUNS on ASCII text, where no character is CJK: the same runs, without a lookahead per character."""


def _runs(text: str) -> list[tuple[str, str]]:
    """The text as runs of Latin-like words ("word"), CJK ("cjk": kana, ideographs, Hangul together, so a word
    written across scripts such as 作り直 is one) and separators ("sep")."""
    if text.isascii():
        # findall gives "" for the group that did not take part; every run is one character or more
        return [("word", word) if word else ("sep", sep) for word, sep in _ASCII_RUNS.findall(text)]
    out: list[tuple[str, str]] = []
    for m in _RUNS.finditer(text):
        cjk, word, sep = m.groups()
        if cjk is not None:
            out.append(("cjk", cjk))
        elif word is not None:
            # "_" is a word character for the regex but separates words here ("api_client" is api, client)
            out.append(("word", word))
        else:
            out.append(("sep", sep))
    return out


_BREAK_PUNCT = frozenset(",;:()[]{}\"、，；：（）")


@functools.lru_cache(maxsize=16384)
def _items(sentence: str) -> tuple[tuple[str, str, str | None], ...]:
    """The sentence as items: (act, verb, kind), (obj, object, None), (gen, object, None), (unk, stem, "first"
    when it is the sentence's first word), (both, object, "verb|kind") for a word that is either, (wh, word),
    (brk, word) for a clause break, (wo, を), (ba, 把), (post, particle) for a Japanese circumstance."""
    lex = _lexicon()
    text = unicodedata.normalize("NFKC", sentence).lower()
    if "://" in text or "www." in text:
        text = _URL.sub(" ", text)
    if "/" in text or _DOT_LETTER.search(text) is not None:  # _PATH needs one or the other
        text = _PATH.sub(lambda m: " " + (m.group(1) or m.group(2) or "").replace("_", " ").replace("-", " ") + " ",
                         text)
    if _DIGIT_OR_HASH.search(text) is not None:
        text = _NOISE.sub(" ", text)
    out: list[tuple[str, str, str | None]] = []
    latin: list[str] = []
    seen_words = [0]
    # the loop's names bound once (a sentence has dozens of words; each looked up several globals)
    stem, phrase_starts, phrases, sense_of = _stem, lex.phrase_starts, lex.phrases, lex.word
    wh_words, clause_breaks, filler = lx.WH_WORDS, lx.CLAUSE_BREAKS, lx.FILLER

    def flush_latin() -> None:
        i = 0
        while i < len(latin):
            matched = False
            for size in ((4, 3, 2) if stem(latin[i]) in phrase_starts else ()):
                key = tuple(stem(w) for w in latin[i:i + size])
                if len(key) == size and key in phrases:
                    _emit(out, phrases[key])
                    i += size
                    seen_words[0] += size
                    matched = True
                    break
            if matched:
                continue
            word = latin[i]
            i += 1
            first = seen_words[0] == 0
            if word not in _LEADING:
                seen_words[0] += 1
            if word in wh_words:
                out.append(("wh", word, None))
                sense = sense_of(word)
                if sense is not None and sense.action:
                    out.append(("act", sense.action, sense.kind))
                continue
            if word in clause_breaks or (word in _SUBJECTS and seen_words[0] > 1):
                out.append(("brk", word, None))
                continue
            if word in filler or len(word) < 2:
                continue
            sense = sense_of(word)
            if sense is not None and word.endswith("ed") and stem(word) != word and sense.action and not sense.obj and \
                    any(i[0] in ("act", "both", "unk") for i in out):
                continue  # "clean the merged worktrees", "regenerate the generated client": a modifier
            if sense is not None:
                _emit(out, sense)
            elif word not in _EN_STOP and not word.isdigit():
                out.append(("unk", stem(word), "first" if first else None))
        latin.clear()

    for kind, run in _runs(text):
        if kind == "word":
            if "_" in run or "'" in run:
                latin.extend(w for w in _UNDERSCORE.split(run) if w)
            else:
                latin.append(run)
            continue
        if kind == "sep":
            if run != " " and any(c in _BREAK_PUNCT for c in run):  # most separators are one space
                flush_latin()
                out.append(("brk", run.strip(), None))
            continue  # spaces and hyphens only separate words
        flush_latin()
        seen_words[0] += 1
        _cjk(out, run, lex)
    flush_latin()
    return tuple(out)


_SUBJECTS = frozenset("we i you they he she it's there's we're i'm we'll i'll".split())
"""A subject after the ask starts a sentence of its own ("regenerate the client we release friday")."""

_LEADING = frozenset("""hey hi hello ok okay alright so now then please pls plz kindly can could would will you i
    we let lets let's need needs want wants time to mind like i'd id just quickly also btw and go ahead""".split())
"""Words before an imperative's verb ("could you please ..."): the verb is still the first word after them."""

_EN_STOP = frozenset("""a an the and or but if of in on at by for with from into about as is are was were be been
    being am do does did done have has had this that these those there here what which who whom how why when
    where can could should would will shall may might must not no only own same than very some any all each every
    it its he she they them their i me my we our you your up out over under again once do doing make sure""".split())


def _emit(out: list, sense: _Sense) -> None:
    if sense.action and sense.obj:
        out.append(("both", sense.obj, sense.action + "|" + (sense.kind or "")))
    elif sense.action:
        out.append(("act", sense.action, sense.kind))
    elif sense.obj:
        out.append(("gen" if sense.generic else "obj", sense.obj, None))


def _cjk(out: list, span: str, lex: _Lexicon) -> None:
    """A span of Japanese, Chinese or Korean: lexicon words longest first (a katakana word only as a whole:
    ログ is not in ログイン); particles, fillers and unknown words between them."""
    n = len(span)
    scripts = [_script(c) for c in span]
    kata_end = [0] * n  # for a katakana char at a run's start: where that run ends
    i = 0
    while i < n:
        if scripts[i] == "kata":
            j = i
            while j < n and scripts[j] == "kata":
                j += 1
            kata_end[i] = j
            i = j
        else:
            i += 1
    pending, pending_script = "", ""

    def flush_pending() -> None:
        nonlocal pending, pending_script
        if pending:
            if pending_script == "hira":
                _particle(out, pending)
            elif len(pending) >= 2 or pending_script == "kata":
                out.append(("obj", pending, None))
            pending, pending_script = "", ""

    i = 0
    while i < n:
        if scripts[i] == "kata" and (i == 0 or scripts[i - 1] != "kata"):
            # A katakana word: a lexicon word as a whole, or a compound of lexicon words, or a word of its own.
            end = kata_end[i]
            parts = _kata_parts(span[i:end], lex)
            flush_pending()
            if parts is None:
                out.append(("obj", span[i:end], None))
            else:
                for part in parts:
                    _emit(out, lex.cjk[part])
            i = end
            continue
        found = 0
        for size in range(min(lex.cjk_max, n - i), 0, -1):
            end = i + size
            if scripts[end - 1] == "kata":
                continue  # katakana words are taken whole, above
            if lex.cjk.get(span[i:end]) is not None:
                found = size
                break
        if found:
            flush_pending()
            sense = lex.cjk[span[i:i + found]]
            if sense.action or sense.obj:
                _emit(out, sense)
            i += found
            continue
        ch, script = span[i], scripts[i]
        if ch == lx.ZH_OBJECT_MARKER and script == "han":
            flush_pending()
            out.append(("ba", ch, None))
        else:
            if pending and script != pending_script:
                flush_pending()
            pending += ch
            pending_script = script
        i += 1
    flush_pending()


def _kata_parts(word: str, lex: _Lexicon) -> list[str] | None:
    """A katakana word as lexicon words (リリースノート, or ロケール + ファイル), or None."""
    if word in lex.cjk and (lex.cjk[word].action or lex.cjk[word].obj):
        return [word]
    best: list[list[str] | None] = [None] * (len(word) + 1)
    best[0] = []
    for end in range(2, len(word) + 1):
        for start in range(0, end - 1):
            part = word[start:end]
            if best[start] is not None and part in lex.cjk and (lex.cjk[part].action or lex.cjk[part].obj):
                best[end] = best[start] + [part]
                break
    return best[len(word)] or None


def _particle(out: list, text: str) -> None:
    if lx.JA_OBJECT_PARTICLE in text:
        out.append(("wo", text, None))
    elif text.startswith(_JA_CIRCUMSTANCE):
        out.append(("post", text, None))
    elif text.startswith(_JA_JOIN):
        return
    else:
        out.append(("brk", text, None))


_JA_REPORT = re.compile(r"(?:[しっいえけげせてねべめれん]た|でした|ました)(?:よ|ね|けど|が)?[。．.！!、,\s]*$")
"""A Japanese sentence ending in the past tense (した, った, ました...) reports what happened; a request ends in
て, たい, ください or the plain form."""


def _terms(items: tuple, clause: str) -> tuple[str, ...]:
    """k:/a:/o:/g: terms of a sentence's items: the main verb's kind, its verbs, and its object."""
    if not items:
        return ()
    verbs: list[tuple[str, str | None]] = []
    objects: list[tuple[str, str]] = []  # (tag, term)
    question = any(i[0] == "wh" for i in items) or clause.rstrip().endswith(("?", "？"))
    japanese = any(i[0] in ("wo", "post") for i in items) or _HIRAGANA.search(clause) is not None
    if japanese and _JA_REPORT.search(clause) is not None:
        return ()  # "ビルドした拡張機能をchromeにインストールした": what was done, not a request
    if japanese:
        verbs, objects = _japanese(items)
    else:
        verbs, objects = _svo(items)
    terms: set[str] = set()
    kind = next((k for _, k in verbs if k), None)
    if kind is None and question:
        kind = lx.INQUIRE
    if kind:
        terms.add("k:" + kind)
    terms.update("a:" + v for v, _ in verbs)
    if kind == lx.SHIP:
        objects = [("g" if term in lx.SHIPPED else tag, term) for tag, term in objects]
    terms.update(f"{tag}:{term}" for tag, term in objects)
    if kind == lx.SHIP and not any(t.startswith("o:") for t in terms):
        terms.update("o:" + v for v, k in verbs[:1])  # "cut a release", "deploy": what is done is the thing
    return tuple(sorted(terms))


def _obj_of(item) -> tuple[str, str] | None:
    tag, value, _ = item
    if tag in ("obj", "both"):
        return ("o", value)
    if tag == "unk":
        return ("o", value)
    if tag == "gen":
        return ("g", value)
    return None


def _svo(items: tuple) -> tuple[list, list]:
    """English, Chinese, Korean-as-written, Romance, German: the first verb leads; its object is the noun
    phrase right after it (up to a preposition or conjunction); 把 X marks X as the object."""
    verbs: list[tuple[str, str | None]] = []
    start = None
    for n, item in enumerate(items):
        if item[0] == "act":
            verbs.append((item[1], item[2]))
            start = n
            break
        if item[0] == "both" and n == _first_content(items):
            action, _, kind = item[2].partition("|")
            verbs.append((action, kind or None))
            start = n
            break
    if start is None:
        first = _first_content(items)
        if first is not None and items[first][0] == "unk" and items[first][2] == "first" and \
                not any(i[0] == "wh" for i in items):
            # An imperative whose verb we do not know ("paginate the orders"): its first word is the verb.
            verbs.append((items[first][1], None))
            start = first
    if any(i[0] == "ba" for i in items):
        at = next(n for n, i in enumerate(items) if i[0] == "ba")
        objs = [o for i in items[at + 1:] if i[0] not in ("act",) and (o := _obj_of(i))]
        cut = next((n for n, i in enumerate(items[at + 1:], at + 1) if i[0] == "act"), len(items))
        objs = [o for i in items[at + 1:cut] if (o := _obj_of(i))]
        verbs += [(i[1], i[2]) for i in items[cut:] if i[0] == "act" and (i[1], i[2]) not in verbs]
        return verbs, objs
    if start is None:
        return verbs, [o for i in items if (o := _obj_of(i))]
    objs: list[tuple[str, str]] = []
    n = start + 1
    while n < len(items):
        item = items[n]
        if item[0] == "brk":
            # "reset and seed the db": a verb after "and" is the same request's; anything else ends the object.
            if n + 1 < len(items) and items[n + 1][0] in ("act", "both") and not objs:
                nxt = items[n + 1]
                if nxt[0] == "act":
                    verbs.append((nxt[1], nxt[2]))
                else:  # "reset and seed the db": seed, a verb here, though also a thing
                    action, _, kind = nxt[2].partition("|")
                    verbs.append((action, kind or None))
                n += 2
                continue
            if any(tag == "o" for tag, _ in objs):
                break
            n += 1
            continue
        if item[0] == "act":
            if any(tag == "o" for tag, _ in objs):
                break
            verbs.append((item[1], item[2]))
        elif (o := _obj_of(item)) is not None:
            objs.append(o)
        n += 1
    if not objs:  # "the changelog needs updating": the object came first ("take the build live": not "take")
        objs = [o for i in items[:start] if i[2] != "first" and (o := _obj_of(i))]
    if not objs:
        objs = [o for i in items[start + 1:] if (o := _obj_of(i))]
    return verbs, objs


def _first_content(items: tuple) -> int | None:
    return next((n for n, i in enumerate(items) if i[0] not in ("brk",)), None)


def _japanese(items: tuple) -> tuple[list, list]:
    """Japanese: the verb comes last and the object before を, but what is acted on may also be marked に or
    は ("DBに初期データを投入して" is seeding the database): every noun is kept but a source or a manner (から,
    で, より ... followed by more nouns). A verb-like word followed by a particle is a noun (リリースを)."""
    verbs: list[tuple[str, str | None]] = []
    objs = []
    for n, item in enumerate(items):
        after = items[n + 1] if n + 1 < len(items) else None
        marked = after is not None and after[0] in ("wo", "post")
        if item[0] == "act":
            if marked:
                objs.append(("o", item[1]))
            else:
                verbs.append((item[1], item[2]))
            continue
        o = _obj_of(item)
        if o is None:
            continue
        if marked and after[1].startswith(("から", "で", "より", "として", "について")) \
                and any(_obj_of(i) for i in items[n + 2:]):
            continue
        if item[0] == "both" and not marked and not any(_obj_of(i) for i in items[n + 1:]):
            action, _, kind = item[2].partition("|")
            verbs.append((action, kind or None))  # the last word, a verb (テストして, リリースして)
            continue
        objs.append(o)
    if not verbs:
        wo = [n for n, i in enumerate(items) if i[0] == "wo"]
        after_wo = [i for i in items[wo[-1] + 1:] if i[0] == "unk"] if wo else []
        verbs += [(i[1], None) for i in after_wo[:1]]
    verbs.reverse()  # the main verb is the last one
    return verbs, objs


def _short(clause: str) -> str:
    """The ask, short: what precedes and follows it in politeness dropped, lower case for Latin script."""
    text = " ".join(unicodedata.normalize("NFKC", clause).split())
    if _ANY_CJK.search(text) is not None:
        text = _CJK_LEAD.sub("", text)
        for _ in range(3):
            before = text
            text = _CJK_POLITE_END.sub("", text)
            if text == before:
                break
        text = text.rstrip("。．.！!？?、, ")
    text = text.lower() if text.isascii() or _KANA_HAN.search(text) is None else text
    for _ in range(3):
        before = text
        text = _drop_tail(_EN_ASKING.sub("", _EN_LEAD.sub("", text)))
        if text == before:
            break
    return text[:120]
