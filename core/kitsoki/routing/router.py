"""The router: compiled tiers (exact example, stem-bag synonym, template) over a set of intents."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from core.kitsoki.routing.lex import Token, _normalise_exact, _stems_of, content_stems, tokenize
from core.kitsoki.routing.slots import (
    _EnumTable,
    _enum_table,
    _parse_bool,
    _parse_enum,
    _parse_int,
    _parse_list,
    _parse_money,
    _parse_number,
    _span_parser,
)
from core.kitsoki.routing.templates import TemplateError, _analyse_template, _literal_norms, is_template

# Confidence bands (constants in kitsoki, never learned). An exact, unique example is kitsoki's
# deterministic tier (MatchDeterministic: menu labels and unique examples, run before semroute);
# semroute.Match itself scores such a hit as a whole-utterance synonym, 0.90 (verdict.go:13), and
# that is the score kitsoki reports for it, so ours is the same.
CONFIDENCE_EXACT = 0.90
CONFIDENCE_SYNONYM = 0.90
CONFIDENCE_TEMPLATE = 0.80
CONFIDENCE_TEMPLATE_PARTIAL = 0.65
CONFIDENCE_TIE = 0.50

#: A bare synonym only counts as a whole-utterance hit when the input has at
#: most this many content stems the synonym does not cover: a stray word in a
#: long paste is not a command.
BARE_MAX_UNCOVERED = 6


# --------------------------------------------------------------------------
# Protocols the story model satisfies
# --------------------------------------------------------------------------


class SlotLike(Protocol):
    type: str
    values: list[str]
    value_synonyms: dict[str, list[str]]


class IntentLike(Protocol):
    name: str
    examples: list[str]
    synonyms: list[str]
    slots: dict[str, SlotLike]


# --------------------------------------------------------------------------
# Verdict
# --------------------------------------------------------------------------

Tier = Literal["exact", "synonym", "template", "tie", "none"]


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    intent: str | None
    confidence: float
    tier: Tier
    reason: str = ""
    pattern: str | None = None
    slots: dict[str, Any] = Field(default_factory=dict)
    missing_slots: list[str] = Field(default_factory=list)
    candidates: list[str] = Field(default_factory=list)


_NONE = Verdict(intent=None, confidence=0.0, tier="none")


# --------------------------------------------------------------------------
# Router
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    intent: str
    source: str
    kind: str  # "synonym" | "example"
    stems: frozenset[str]


@dataclass(frozen=True, slots=True)
class _CompiledTemplate:
    intent: str
    source: str
    segments: tuple[tuple[str, Any], ...]  # ("lit", norms) | ("cap", slot name)
    slot_types: dict[str, str]
    enums: dict[str, _EnumTable]
    literal_norms: frozenset[str]  # pre-filter: all must occur in the input


@dataclass
class _Merged:
    examples: list[str]
    synonyms: list[str]
    slots: dict[str, Any]


def _merge_intents(intents: Iterable[IntentLike]) -> dict[str, _Merged]:
    """Union duplicate declarations of an intent, like kitsoki's collectIntents.

    kitsoki folds the union back in LEXICOGRAPHIC order (sortedKeys), so the
    "first matching entry" and template tie-break order are alphabetical, not
    declaration order.  We mirror that for fidelity.  Slots: later
    declarations override earlier ones per slot name.
    """
    acc: dict[str, tuple[set[str], set[str], dict[str, Any]]] = {}
    for it in intents:
        exs, syns, slots = acc.setdefault(it.name, (set(), set(), {}))
        exs.update(str(e) for e in (it.examples or ()))
        syns.update(str(s) for s in (it.synonyms or ()))
        slots.update(dict(getattr(it, "slots", None) or {}))
    return {
        name: _Merged(sorted(exs), sorted(syns), slots)
        for name, (exs, syns, slots) in acc.items()
    }


def _find_literal(
    tokens: list[Token], start: int, want: tuple[str, ...]
) -> tuple[int, int] | None:
    """First (anchor, end) where ``want`` stems occur in order from ``start``.

    A token equal to the wanted stem is consumed even if it is a stopword;
    a non-matching stopword is skipped (absorbed); any other token breaks.
    """
    n = len(tokens)
    for i in range(start, n):
        j, k = i, 0
        anchor = -1
        while j < n and k < len(want):
            tok = tokens[j]
            if tok.norm == want[k]:
                if anchor < 0:
                    anchor = j
                j += 1
                k += 1
            elif tok.is_stop:
                j += 1
            else:
                break
        if k == len(want):
            return anchor, j
    return None


class Router:
    """Compiled semantic router over a set of intents (compile once, route many)."""

    def __init__(
        self,
        intents: Iterable[IntentLike],
        stop_extra: Iterable[str] = (),
        *,
        strict: bool = True,
    ) -> None:
        self.stop_extra: frozenset[str] = frozenset(stop_extra)
        self.problems: list[TemplateError] = []
        merged = _merge_intents(intents)
        self.intent_names: tuple[str, ...] = tuple(sorted(merged))

        self._exact: dict[str, dict[str, str]] = {}  # normalised -> {intent: source}
        self._entries: list[_Entry] = []
        self._by_stem: dict[str, list[int]] = {}
        self._templates: dict[str, list[_CompiledTemplate]] = {}

        for name in self.intent_names:
            m = merged[name]
            for ex in m.examples:
                key = _normalise_exact(ex)
                if key:
                    self._exact.setdefault(key, {}).setdefault(name, ex)
            for syn in m.synonyms:
                if is_template(syn):
                    ct = self._compile_template(name, syn, m.slots, strict)
                    if ct is not None:
                        self._templates.setdefault(name, []).append(ct)
                else:
                    self._add_entry(name, syn, "synonym")
            for ex in m.examples:
                # examples are never templates, even when they contain braces
                self._add_entry(name, ex, "example")

        self._template_intents = tuple(sorted(self._templates))

    # -- compile helpers ---------------------------------------------------

    def _add_entry(self, intent: str, source: str, kind: str) -> None:
        stems = content_stems(source, self.stop_extra)
        if not stems:  # empty / all-stopword phrases would match anything
            return
        eid = len(self._entries)
        self._entries.append(_Entry(intent, source, kind, stems))
        for s in stems:
            self._by_stem.setdefault(s, []).append(eid)

    def _compile_template(
        self, intent: str, src: str, slots: dict[str, Any], strict: bool
    ) -> _CompiledTemplate | None:
        problems, segs = _analyse_template(src, frozenset(slots))
        if problems:
            err = TemplateError(intent, src, problems[0])
            if strict:
                raise err
            self.problems.append(err)
            return None
        compiled: list[tuple[str, Any]] = []
        slot_types: dict[str, str] = {}
        enums: dict[str, _EnumTable] = {}
        for kind, val in segs:
            if kind == "cap":
                slot = slots[val]
                typ = str(getattr(slot, "type", "") or "string")
                slot_types[val] = typ
                if typ in ("enum", "list[enum]"):
                    enums[val] = _enum_table(slot)
                compiled.append(("cap", val))
            else:
                compiled.append(("lit", _literal_norms(val, self.stop_extra)))
        lits = frozenset(n for kind, val in compiled if kind == "lit" for n in val)
        return _CompiledTemplate(intent, src, tuple(compiled), slot_types, enums, lits)

    # -- routing -------------------------------------------------------------

    def route(self, text: str, allow: Collection[str] | None = None) -> Verdict:
        """Route ``text``; ``allow`` restricts routing to those intent names."""
        if not text or not text.strip():
            return _NONE
        allowed = None if allow is None else frozenset(allow)
        if allowed is not None and not allowed:
            return _NONE

        hit = self._exact.get(_normalise_exact(text))
        if hit:
            names = [n for n in hit if allowed is None or n in allowed]
            if len(names) == 1:
                src = hit[names[0]]
                return Verdict(
                    intent=names[0],
                    confidence=CONFIDENCE_EXACT,
                    tier="exact",
                    reason=f"example:{src}",
                    pattern=src,
                )

        tokens = tokenize(text, self.stop_extra)
        if not tokens:
            return _NONE
        verdict = self._match_bare(tokens, allowed)
        if verdict is not None:
            return verdict
        return self._match_templates(tokens, allowed)

    def exact_owners(self, text: str) -> list[str]:
        """The intents that have `text` as one of their examples (kitsoki's room decides among several)."""
        return sorted(self._exact.get(_normalise_exact(text), {}))

    def routes_to(self, text: str, intent: str) -> bool:
        """True when ``text`` routes to ``intent`` with confidence >= 0.65."""
        v = self.route(text)
        return v.intent == intent and v.confidence >= CONFIDENCE_TEMPLATE_PARTIAL

    def _match_bare(
        self, tokens: list[Token], allowed: frozenset[str] | None
    ) -> Verdict | None:
        bag = _stems_of(tokens)
        if not bag or not self._entries:
            return None
        ids: set[int] = set()
        for s in bag:
            ids.update(self._by_stem.get(s, ()))
        matched: dict[str, _Entry] = {}  # insertion order = entry id order
        for eid in sorted(ids):
            e = self._entries[eid]
            if e.intent in matched or (allowed is not None and e.intent not in allowed):
                continue
            if not e.stems <= bag or len(bag) - len(e.stems) > BARE_MAX_UNCOVERED:
                continue
            matched[e.intent] = e
        if not matched:
            return None
        if len(matched) == 1:
            ((name, e),) = matched.items()
            return Verdict(
                intent=name,
                confidence=CONFIDENCE_SYNONYM,
                tier="synonym",
                reason=f"{e.kind}:{e.source}",
                pattern=e.source,
            )
        # Leading-verb tie-break: the first content (non-stop, non-numeric)
        # token of an imperative is the command.
        lead = next((t.norm for t in tokens if not t.is_stop and not t.is_num), "")
        if lead:
            owners = [n for n, e in matched.items() if lead in e.stems]
            if len(owners) == 1:
                e = matched[owners[0]]
                return Verdict(
                    intent=owners[0],
                    confidence=CONFIDENCE_SYNONYM,
                    tier="synonym",
                    reason=f"leading-verb:{lead}",
                    pattern=e.source,
                )
        return _tie(matched)

    def _match_templates(
        self, tokens: list[Token], allowed: frozenset[str] | None
    ) -> Verdict:
        best: dict[str, tuple[_CompiledTemplate, dict[str, Any], list[str]]] = {}
        norms = frozenset(t.norm for t in tokens)
        for name in self._template_intents:
            if allowed is not None and name not in allowed:
                continue
            for tpl in self._templates[name]:
                if not tpl.literal_norms <= norms:
                    continue
                res = self._match_template(tpl, tokens)
                if res is None:
                    continue
                cur = best.get(name)
                if cur is None or len(res[0]) > len(cur[1]):
                    best[name] = (tpl, res[0], res[1])
        if not best:
            return _NONE
        if len(best) > 1:
            return _tie(best)
        ((name, (tpl, slots, missing)),) = best.items()
        if missing:
            return Verdict(
                intent=name,
                confidence=CONFIDENCE_TEMPLATE_PARTIAL,
                tier="template",
                reason=f"template_partial:{tpl.source}",
                pattern=tpl.source,
                slots=slots,
                missing_slots=sorted(missing),
            )
        return Verdict(
            intent=name,
            confidence=CONFIDENCE_TEMPLATE,
            tier="template",
            reason=f"template:{tpl.source}",
            pattern=tpl.source,
            slots=slots,
        )

    def _match_template(
        self, tpl: _CompiledTemplate, tokens: list[Token]
    ) -> tuple[dict[str, Any], list[str]] | None:
        slots: dict[str, Any] = {}
        missing: list[str] = []
        cursor = 0
        pending: str | None = None
        for kind, val in tpl.segments:
            if kind == "cap":
                if pending is not None:  # adjacent captures never match
                    return None
                pending = val
                continue
            found = _find_literal(tokens, cursor, val)
            if found is None:
                return None
            anchor, end = found
            if pending is not None:
                self._fill(tpl, pending, tokens[cursor:anchor], slots, missing)
                pending = None
            elif anchor != cursor:
                # unaccounted input before a literal: the positional contract
                # is broken (kitsoki: even a leading "please" misses here)
                return None
            cursor = end
        if pending is not None:
            self._fill(tpl, pending, tokens[cursor:], slots, missing)
        elif any(not t.is_stop for t in tokens[cursor:]):
            return None  # trailing content after a final literal
        return slots, missing

    @staticmethod
    def _fill(
        tpl: _CompiledTemplate,
        slot: str,
        captured: list[Token],
        slots: dict[str, Any],
        missing: list[str],
    ) -> None:
        typ = tpl.slot_types[slot]
        value: Any = None
        if captured:
            if typ == "int":
                value = _parse_int(captured)
            elif typ == "number":
                value = _parse_number(captured)
            elif typ == "bool":
                value = _parse_bool(captured)
            elif typ == "enum":
                value = _parse_enum(captured, tpl.enums[slot])
            elif typ in ("money", "$int"):
                value = _parse_money(captured)
            elif typ.startswith("list[") and typ.endswith("]") and _span_parser(typ[5:-1], tpl.enums.get(slot)):
                value = _parse_list(captured, _span_parser(typ[5:-1], tpl.enums.get(slot)))
            else:  # "string" and anything else: the captured (lowercased) text
                value = " ".join(t.surface for t in captured).strip() or None
        if value is None:
            missing.append(slot)
        else:
            slots[slot] = value


def _tie(matched) -> Verdict:
    """Several intents match at the same tier: kitsoki's 0.50 tie band, candidates sorted."""
    cands = sorted(matched)
    return Verdict(intent=None, confidence=CONFIDENCE_TIE, tier="tie", reason=f"ambiguous:{len(cands)}",
                   candidates=cands)
