"""The runner copies a story's world before each step's effects (kitsoki's applyEffects works on a new
world): core.flows.values.copy_value must give what copy.deepcopy gives, aliases and Go types included."""

from __future__ import annotations

import copy

from core.flows.values import GoInt, copy_value, go_type


def test_a_copy_is_equal_independent_and_keeps_shared_parts_shared():
    shared = {"k": [1, 2.5, "x", None, True]}
    world = {"a": shared, "b": shared, "n": GoInt(3, "int64"), "deep": [[{"z": shared}]], 7: "int key"}
    got = copy_value(world)
    assert got == copy.deepcopy(world) == world
    assert got["a"] is got["b"] is got["deep"][0][0]["z"]  # as deepcopy keeps them
    assert got["a"] is not shared
    got["a"]["k"].append("more")
    assert shared["k"] == [1, 2.5, "x", None, True]
    assert go_type(got["n"]) == "int64"


def test_other_values_go_through_deepcopy():
    class Box:
        def __init__(self, items):
            self.items = items

    box = Box([1, 2])
    got = copy_value({"box": box, "t": (1, [2])})
    assert got["box"] is not box and got["box"].items == [1, 2] and got["box"].items is not box.items
    assert got["t"] == (1, [2])
