"""Behaviour of the kitsoki intent-router port (core.kitsoki.routing)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from core.kitsoki.routing import (
    Router,
    TemplateError,
    Verdict,
    content_stems,
    is_template,
    template_problems,
    tokenize,
)


@dataclass
class Slot:
    type: str = "string"
    values: list[str] = field(default_factory=list)
    value_synonyms: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Intent:
    name: str
    examples: list[str] = field(default_factory=list)
    synonyms: list[str] = field(default_factory=list)
    slots: dict[str, Slot] = field(default_factory=dict)


def trail_router(**kw) -> Router:
    return Router(
        [
            Intent("ford", examples=["ford the river"], synonyms=["wade", "walk it"]),
            Intent("quit", examples=["quit the game"], synonyms=["cancel", "exit"]),
            Intent("hunt", examples=["go hunting"], synonyms=["look for meat"]),
            Intent(
                "travel",
                examples=["continue on the trail"],
                synonyms=["set off in {direction}", "head {direction} for {days} days"],
                slots={
                    "direction": Slot(
                        "enum",
                        values=["north", "south", "west"],
                        value_synonyms={
                            "north": ["up", "northward"],
                            "west": ["sunset"],
                        },
                    ),
                    "days": Slot("int"),
                },
            ),
            Intent("pick", synonyms=["pick {n}"], slots={"n": Slot("int")}),
        ],
        **kw,
    )


# -- exact tier ---------------------------------------------------------------


def test_exact_example_hit_ignores_case_and_spacing():
    v = trail_router().route("  Ford   the RIVER ")
    assert v == Verdict(
        intent="ford",
        confidence=0.90,  # semroute.Match's band for it (verdict.go ConfidenceWholeSynonym)
        tier="exact",
        reason="example:ford the river",
        pattern="ford the river",
    )


def test_example_shared_by_two_intents_is_not_exact():
    r = Router(
        [Intent("a", examples=["show status"]), Intent("b", examples=["show status"])]
    )
    v = r.route("show status")
    assert v.tier == "tie" and v.intent is None and v.candidates == ["a", "b"]
    # ...but once only one of them is allowed the example is unique again
    assert r.route("show status", allow={"b"}).tier == "exact"


# -- bare synonym tier ----------------------------------------------------------


def test_synonym_subset_hit_with_extra_words():
    v = trail_router().route("please wade across the river now")
    assert (v.intent, v.confidence, v.tier) == ("ford", 0.9, "synonym")
    assert v.reason == "synonym:wade" and v.pattern == "wade"


def test_examples_act_as_implicit_synonyms():
    v = trail_router().route("let's look for some meat")
    assert (v.intent, v.reason) == ("hunt", "synonym:look for meat")
    v = trail_router().route("go hunt deer")
    assert (v.intent, v.reason, v.tier) == ("hunt", "example:go hunting", "synonym")
    assert trail_router().route("hunting").tier == "none"  # "go" is not covered


def test_stemming_makes_inflections_equivalent():
    r = Router([Intent("test", synonyms=["run test"])])
    assert content_stems("running tests") == content_stems("run test")
    v = r.route("running tests")
    assert (v.intent, v.tier, v.reason) == ("test", "synonym", "synonym:run test")


def test_long_paste_containing_synonym_word_does_not_route():
    paste = (
        "the build failed with a stack trace in module parser after upgrading "
        "dependencies; the footer of the prompt said Esc cancel so I copied everything"
    )
    r = trail_router()
    assert r.route(paste).intent is None
    assert r.route(paste).tier == "none"
    # the same word in a short command still routes
    assert r.route("cancel that now").intent == "quit"


def test_uncovered_guard_boundary_is_six_stems():
    r = Router([Intent("quit", synonyms=["cancel"])])
    assert (
        r.route("cancel alpha bravo charlie delta echo foxtrot").intent == "quit"
    )  # 6 extra
    assert (
        r.route("cancel alpha bravo charlie delta echo foxtrot golf").intent is None
    )  # 7


def test_tie_between_intents_lists_sorted_candidates():
    r = Router(
        [Intent("stage", synonyms=["stage"]), Intent("commit", synonyms=["commit"])]
    )
    v = r.route("the staged commit")  # leading content word "staged" -> stage
    assert v.intent == "stage" and v.reason == "leading-verb:stage"
    v = r.route("7 and the commit staged")  # numbers are skipped for the lead
    assert v.intent == "commit"
    v = r.route("hmm staged commit")  # lead "hmm" is in neither -> tie
    assert v == Verdict(
        intent=None,
        confidence=0.5,
        tier="tie",
        reason="ambiguous:2",
        candidates=["commit", "stage"],
    )


def test_leading_verb_breaks_tie():
    r = Router(
        [
            Intent("commit", synonyms=["commit"], examples=["commit my work"]),
            Intent("stage", synonyms=["stage", "add to index"]),
        ]
    )
    v = r.route("commit the staged fix")
    assert (v.intent, v.confidence, v.tier) == ("commit", 0.9, "synonym")
    assert v.reason == "leading-verb:commit" and v.pattern == "commit"
    assert r.route("stage the commit").intent == "stage"


def test_stopwords_only_synonyms_are_ignored_and_extra_stopwords_apply():
    r = Router(
        [
            Intent("x", synonyms=["the", "do it"]),
            Intent("wagon", synonyms=["wagon fix"]),
        ]
    )
    assert r.route("the").tier == "none"
    assert r.route("fix").tier == "none"
    r2 = Router([Intent("repair", synonyms=["wagon fix"])], stop_extra=["wagon"])
    assert r2.route("fix").intent == "repair"  # "wagon" no longer required


def test_bare_hit_outranks_templates():
    r = Router(
        [
            Intent("go", synonyms=["go {where}"], slots={"where": Slot()}),
            Intent("north", synonyms=["go north"]),
        ]
    )
    assert r.route("go north").intent == "north"
    v = r.route("go east")
    assert (v.intent, v.tier, v.slots) == ("go", "template", {"where": "east"})


# -- template tier ------------------------------------------------------------


def test_template_enum_slot_with_value_synonyms():
    r = trail_router()
    v = r.route("set off in North")
    assert (v.intent, v.confidence, v.tier) == ("travel", 0.8, "template")
    assert v.slots == {"direction": "north"}
    assert (
        v.reason == "template:set off in {direction}"
        and v.pattern == "set off in {direction}"
    )
    assert r.route("set off in the Sunset").slots == {"direction": "west"}
    assert r.route("set off in UP").slots == {"direction": "north"}
    assert r.route("set off in sout").slots == {"direction": "south"}  # edit distance 1


def test_template_int_slot_digits_and_words():
    r = trail_router()
    v = r.route("pick 3")
    assert (v.intent, v.confidence, v.slots) == ("pick", 0.8, {"n": 3})
    assert r.route("pick twenty five").slots == {"n": 25}
    v = r.route("head south for 4 days")
    assert v.slots == {"direction": "south", "days": 4}
    assert v.pattern == "head {direction} for {days} days"


def test_template_partial_parse_reports_missing_slots():
    r = trail_router()
    v = r.route("pick lots")
    assert (v.intent, v.confidence, v.tier) == ("pick", 0.65, "template")
    assert v.missing_slots == ["n"] and v.slots == {}
    assert v.reason == "template_partial:pick {n}"
    v = r.route("head sideways for 2 days")
    assert v.confidence == 0.65
    assert v.slots == {"days": 2} and v.missing_slots == ["direction"]
    assert r.routes_to("pick lots", "pick")  # 0.65 still counts


def test_template_literals_are_positional():
    r = trail_router()
    assert r.route("in north set off").tier == "none"  # literals out of order
    assert r.route("pick 3 apples now").slots == {"n": 3}  # int takes the first number
    r2 = Router(
        [Intent("cross", synonyms=["cross {river} now"], slots={"river": Slot()})]
    )
    assert r2.route("cross the big river now").slots == {"river": "the big river"}
    assert (
        r2.route("cross the big river now please").intent == "cross"
    )  # trailing stopword ok
    assert (
        r2.route("cross the big river now quickly").tier == "none"
    )  # trailing content


def test_template_types_bool_number_string():
    r = Router(
        [
            Intent(
                "cfg",
                synonyms=["verbose {on}", "ratio {r}", "name wagon {title}"],
                slots={
                    "on": Slot("bool"),
                    "r": Slot("number"),
                    "title": Slot("string"),
                },
            )
        ]
    )
    assert r.route("verbose yes").slots == {"on": True}
    assert r.route("verbose nope").slots == {"on": False}
    assert r.route("ratio 0.75").slots == {"r": 0.75}
    assert r.route("name wagon The Rolling Thunder").slots == {
        "title": "the rolling thunder"
    }


def test_most_specific_template_wins_within_intent_and_ties_across():
    r = Router(
        [
            Intent(
                "buy",
                synonyms=["buy {item}", "buy {item} for {cost}"],
                slots={"item": Slot(), "cost": Slot("int")},
            ),
            Intent("trade", synonyms=["{thing} swap"], slots={"thing": Slot()}),
            Intent("barter", synonyms=["{thing} swap"], slots={"thing": Slot()}),
        ]
    )
    v = r.route("buy oxen for 40")
    assert v.slots == {"item": "oxen", "cost": 40}
    assert v.pattern == "buy {item} for {cost}"
    v = r.route("wheel swap")
    assert (v.tier, v.intent, v.candidates, v.reason) == (
        "tie",
        None,
        ["barter", "trade"],
        "ambiguous:2",
    )


# -- template validation --------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected_start"),
    [
        (
            "pick {count}",
            'unknown slot "count" referenced by template (intent declares slots [n])',
        ),
        (
            "{n}{n}",
            "adjacent captures {n}{n} — templates require a literal token between captures",
        ),
        ("{n} {n}", "adjacent captures {n}{n}"),
        ("pick {n", "unmatched '{' at position 5"),
        ("pick n}", "unmatched '}' at position 6"),
        ("pick {}", "empty capture {} at position 5"),
    ],
)
def test_template_problems_reasons(template, expected_start):
    problems = template_problems(template, ["n"])
    assert problems and problems[0].startswith(expected_start)


def test_template_problems_clean_and_is_template():
    assert template_problems("buy {item} for {cost}", ["item", "cost"]) == []
    assert (
        template_problems("{x} the {y}", ["x", "y"]) == []
    )  # stopword literal separates
    assert (
        is_template("go {dir}")
        and is_template("oops }")
        and not is_template("go north")
    )


def test_router_strict_raises_and_lenient_collects():
    bad = [
        Intent("go", synonyms=["go {where}", "walk"], slots={}),
        Intent("pick", synonyms=["pick {n}{m}"], slots={"n": Slot(), "m": Slot()}),
    ]
    with pytest.raises(TemplateError) as exc:
        Router(bad)
    assert exc.value.intent == "go" and exc.value.synonym == "go {where}"
    assert str(exc.value).startswith(
        'intent "go": synonym "go {where}": unknown slot "where"'
    )
    r = Router(bad, strict=False)
    assert [(p.intent, p.synonym) for p in r.problems] == [
        ("go", "go {where}"),
        ("pick", "pick {n}{m}"),
    ]
    assert r.route("walk").intent == "go"  # the rest still routes


# -- allow filter, unions, misc ---------------------------------------------------


def test_allow_filter_restricts_intents():
    r = trail_router()
    assert r.route("please wade across", allow={"quit", "hunt"}).tier == "none"
    assert r.route("please wade across", allow=["ford"]).intent == "ford"
    assert r.route("ford the river", allow={"quit"}).intent is None
    assert r.route("pick 2", allow={"travel"}).tier == "none"
    assert r.route("pick 2", allow={"pick"}).slots == {"n": 2}
    r2 = Router(
        [Intent("stage", synonyms=["stage"]), Intent("commit", synonyms=["commit"])]
    )
    assert r2.route("hmm staged commit", allow={"commit"}).intent == "commit"


def test_duplicate_intent_declarations_are_unioned():
    r = Router(
        [
            Intent("hunt", examples=["go hunting"], synonyms=["shoot"]),
            Intent("ford", synonyms=["wade"]),
            Intent(
                "hunt",
                examples=["look for game"],
                synonyms=["shoot", "track {animal}"],
                slots={"animal": Slot()},
            ),
        ]
    )
    assert r.intent_names == ("ford", "hunt")
    assert r.route("go hunting").intent == "hunt"
    assert r.route("look for game").tier == "exact"
    assert r.route("shoot").intent == "hunt"
    assert r.route("track deer").slots == {"animal": "deer"}


def test_routes_to_and_unrouted():
    r = trail_router()
    assert r.routes_to("wade", "ford")
    assert not r.routes_to("wade", "quit")
    v = r.route("sing a song")
    assert v == Verdict(intent=None, confidence=0.0, tier="none")
    assert r.route("").tier == "none" and r.route("   ").tier == "none"
    assert Router([]).route("anything").tier == "none"


def test_routing_is_fast_for_hundreds_of_intents():
    intents = [
        Intent(
            f"intent{i:03d}",
            examples=[f"do the thing number {i} widget{i}"],
            synonyms=[f"frob{i} gadget", f"twiddle{i} {{n}}"],
            slots={"n": Slot("int")},
        )
        for i in range(300)
    ]
    r = Router(intents)
    assert r.route("please frob123 the gadget").intent == "intent123"
    assert r.route("twiddle42 7").slots == {"n": 7}
    start = time.perf_counter()
    for _ in range(200):
        r.route("please frob123 the gadget quickly")
        r.route("twiddle299 seven")
    per_call = (time.perf_counter() - start) / 400
    assert per_call < 0.005


# --- kitsoki's money and list slot parsers, UAX#29 words (internal/slotparse, internal/lex) -----------

@pytest.mark.parametrize("text, dollars", [
    ("120 dollars", 120), ("1 buck", 1), ("$120", 120), ("$120.50", 121), ("$120.49", 120), ("120.50 dollars", 121),
    ("please 120", 120), ("buy 6 oxen for $240", 6), ("I'd like to spend 240 dollars", 240),
    ("a few hundred dollars", 100), ("two hundred fifty bucks", 250), ("200 lbs", 200),
])
def test_money_slots_parse_as_kitsoki_parses_them(text, dollars):
    r = Router([Intent("pay", synonyms=["pay {amount}"], slots={"amount": Slot("money")})])
    assert r.route(f"pay {text}").slots == {"amount": dollars}


@pytest.mark.parametrize("text", ["200lbs", "buy oxen", "the and please"])
def test_money_without_a_number_is_a_missing_slot(text):
    r = Router([Intent("pay", synonyms=["pay {amount}"], slots={"amount": Slot("money")})])
    verdict = r.route(f"pay {text}")
    assert verdict.missing_slots == ["amount"] and verdict.confidence == 0.65


@pytest.mark.parametrize("text, items", [
    ("6", [6]), ("six", [6]), ("6, 12, 3", [6, 12, 3]), ("6 12 3", [6, 12, 3]), ("6 and 12 and 3", [6, 12, 3]),
    ("6, 12, and 3", [6, 12, 3]), ("6 and 12 then drink", [6, 12]), ("6 12 purple", [6, 12]),
    ("6, 12, blue, 3", [6, 12]),
])
def test_list_slots_split_on_and_and_keep_the_prefix_that_parses(text, items):
    r = Router([Intent("buy", synonyms=["buy {counts}"], slots={"counts": Slot("list[int]")})])
    assert r.route(f"buy {text}").slots == {"counts": items}


def test_list_of_enum_values():
    slot = Slot("list[enum]", values=["oxen", "food", "ammo"])
    r = Router([Intent("buy", synonyms=["buy {goods}"], slots={"goods": slot})])
    assert r.route("buy oxen and food").slots == {"goods": ["oxen", "food"]}


def test_words_split_as_uax29_so_each_cjk_ideograph_is_a_word():
    assert [t.surface for t in tokenize("修复登录 bug")] == ["修", "复", "登", "录", "bug"]
    assert [t.surface for t in tokenize("let's fix foo.py at 3.14, 1,000 times e-mail")] == [
        "let's", "fix", "foo.py", "at", "3.14", "1,000", "times", "e", "mail"]
    r = Router([Intent("fix", examples=["修复登录"])])
    assert r.route("修复 登录").intent == "fix"  # the same four words, however spaced
