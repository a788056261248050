"""A choice element's shape (core.kitsoki.view_checks.choice_shape_problem): the hand check that spares
jsonschema for well-shaped bodies never vouches for a body the schema refuses, so every verdict and
message is the schema's (seeded mutations of one body of each mode, compared with jsonschema alone)."""

from __future__ import annotations

import copy
import random

import jsonschema

from core.kitsoki import view_checks
from core.kitsoki.view_checks import CHOICE_SHAPE, _surely_choice_shaped, choice_shape_problem

WELL_SHAPED = [
    {"mode": "single", "prompt": "Pick", "items": [
        {"label": "Go", "intent": "go", "hint": "h", "slots": {"a": 1}, "when": "true"},
        {"label": "Name", "intent": "name_it", "param": {"slot": "n", "type": "enum", "values": ["a", "b"],
                                                          "placeholder": "p", "required": True}}]},
    {"mode": "multi", "intent": "pick", "slot": "picked", "min": 0, "max": 2, "when": "x",
     "items": [{"value": "a", "label": "A", "hint": "", "when": "y"}, {"value": "b"}]},
    {"mode": "form", "intent": "submit", "template": "{n} {k}", "fields": {
        "n": {"type": "int", "min": 1, "max": 9.5, "default": 3, "required": False, "unit": "s"},
        "k": {"type": "enum", "values": ["x"], "readonly": True, "expr": "world.k", "hint": "", "when": "z"},
        "b": {"type": "bool", "default": False}}},
]
ODD = [None, "", "x", "a b", "abc\n", 0, 1, -1, 1.0, 2.5, True, False, [], ["x"], [1], {}, {"a": 1}, "enum",
       "single", "multi", "form", "string", "int", "float", "bool"]
KEYS = ["mode", "items", "intent", "slot", "min", "max", "label", "value", "param", "type", "values", "readonly",
        "expr", "required", "fields", "template", "extra", "hint", "slots", "default", "prompt", "when"]


def _schema_verdict(body):
    view_checks._CHOICE_SEEN.clear()
    errors = list(jsonschema.Draft202012Validator(CHOICE_SHAPE).iter_errors(body))
    return not errors


def _mutant(rng: random.Random, body):
    body = copy.deepcopy(body)
    nodes = []

    def walk(value):
        if isinstance(value, (dict, list)):
            nodes.append(value)
            for item in value.values() if isinstance(value, dict) else value:
                walk(item)

    walk(body)
    for _ in range(rng.randint(1, 3)):
        node = rng.choice(nodes)
        if isinstance(node, dict):
            roll = rng.random()
            if node and roll < 0.3:
                del node[rng.choice(list(node))]
            elif node and roll < 0.7:
                node[rng.choice(list(node))] = rng.choice(ODD)
            else:
                node[rng.choice(KEYS)] = rng.choice(ODD)
        elif node:
            if rng.random() < 0.5:
                node[rng.randrange(len(node))] = rng.choice(ODD)
            else:
                node.pop()
    return body


def test_well_shaped_choices_pass_without_the_schema():
    for body in WELL_SHAPED:
        assert _schema_verdict(body)
        assert _surely_choice_shaped(body)
        assert choice_shape_problem(body) is None


def test_the_hand_check_never_passes_what_the_schema_refuses():
    rng = random.Random(26)
    vouched = refused = 0
    for _ in range(3000):
        body = _mutant(rng, rng.choice(WELL_SHAPED))
        if _surely_choice_shaped(body):
            vouched += 1
            assert _schema_verdict(body), body
        elif not _schema_verdict(body):
            refused += 1
            assert choice_shape_problem(body) is not None
    assert vouched > 100 and refused > 100  # both sides were exercised


def test_a_refused_choice_keeps_the_schema_message():
    assert choice_shape_problem({"items": []}) == "choice: /: missing property 'mode'"
    problem = choice_shape_problem({"mode": "multi", "intent": "x", "slot": "s", "items": [{"value": ""}]})
    assert problem is not None and problem.startswith("choice: /items/0/value: ")
