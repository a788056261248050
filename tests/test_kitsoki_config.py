"""`.kitsoki.yaml` loading: kitsoki's validation rules, every problem with file:line:col and key."""

from __future__ import annotations

import json
import math
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from core.kitsoki import (
    CONFIG_FILE,
    DEV_STORY_WORLD_KEYS,
    LOCAL_CONFIG_FILE,
    ConfigError,
    KitsokiConfig,
    MiningConfig,
    RootOverrides,
    find_workspace,
    load_config,
    parse_go_duration,
)
from core.kitsoki.config import MAX_CONFIG_BYTES, MAX_YAML_DEPTH, MAX_YAML_TOKENS, RootConfig
from core.kitsoki.duration import DurationError

GOOD = """\
story_dirs: [./.kitsoki/stories, ./stories]
default_profile: claude-native
harness_profiles:
  claude-native: {backend: claude, model: opus}
intercept: {enabled: false}
mining:
  enabled: true
  cadence: 45s
  first_pass_sample: 8
  priority_threshold: 2.5
  transcript_dirs:
    - /tmp/extra
  mined_through:
    -some-slug: 1700000000
root:
  import: dev-story
  overrides:
    bindings:
      transport: host.append_to_file
    world:
      judge_mode: llm_then_human
      base_branch: trunk
    synonyms:
      go_standup: ["daily sync", "prep the {day} standup"]
"""


def write(folder: Path, text: str, name: str = CONFIG_FILE) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def load_error(workspace: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_config(workspace)
    return caught.value


def mining(body: str) -> str:
    return "mining:\n  enabled: true\n" + textwrap.indent(textwrap.dedent(body), "  ")


# --- good configs -----------------------------------------------------------------------------


def test_good_config_loads_every_field(tmp_path):
    path = write(tmp_path, GOOD)
    config = load_config(tmp_path)

    assert config.story_dirs == ["./.kitsoki/stories", "./stories"]
    assert config.default_profile == "claude-native"
    assert config.project_profile == ".kitsoki/project-profile.yaml"
    m = config.mining
    assert (m.enabled, m.cadence, m.cadence_seconds) == (True, "45s", 45.0)
    assert (m.first_pass_sample, m.priority_threshold) == (8, 2.5)
    assert m.transcript_dirs == ["/tmp/extra"]
    assert m.mined_through == {"-some-slug": 1700000000}
    assert config.root is not None and config.root.base_story == "dev-story"
    assert config.root.overrides.bindings == {"transport": "host.append_to_file"}
    assert config.root.overrides.world == {"judge_mode": "llm_then_human", "base_branch": "trunk"}
    assert config.root.overrides.synonyms == {"go_standup": ["daily sync", "prep the {day} standup"]}
    assert config.extra == {
        "harness_profiles": {"claude-native": {"backend": "claude", "model": "opus"}},
        "intercept": {"enabled": False},
    }
    assert config.workspace == tmp_path and config.source_files == [path]
    assert config.warnings == []


def test_loaded_config_round_trips_through_json(tmp_path):
    write(tmp_path, GOOD)
    config = load_config(tmp_path)
    dumped = config.model_dump()
    assert dumped["root"]["import"] == "dev-story"
    assert KitsokiConfig.model_validate(dumped) == config
    assert KitsokiConfig.model_validate_json(config.model_dump_json()) == config


def test_empty_file_gives_kitsoki_defaults(tmp_path):
    write(tmp_path, "")
    config = load_config(tmp_path)
    assert config.story_dirs == ["./stories"]
    assert config.root is None  # rung 0
    assert config.mining == MiningConfig()
    assert (config.mining.enabled, config.mining.cadence_seconds) == (False, 30.0)
    assert (config.mining.first_pass_sample, config.mining.priority_threshold) == (12, 0.0)


def test_enabled_block_with_zero_or_empty_values_takes_kitsoki_defaults(tmp_path):
    write(tmp_path, mining('cadence: ""\nfirst_pass_sample: 0\n'))
    m = load_config(tmp_path).mining
    assert (m.cadence, m.first_pass_sample) == ("30s", 12)


def test_zero_cadence_and_yaml11_booleans_are_accepted_like_yaml_v3(tmp_path):
    write(tmp_path, "mining:\n  enabled: yes\n  cadence: 0\n")
    m = load_config(tmp_path).mining
    assert m.enabled and m.cadence_seconds == 0.0


def test_root_without_import_means_dev_story(tmp_path):
    write(tmp_path, "root:\n  overrides:\n    world: {test_cmd: make test}\n")
    root = load_config(tmp_path).root
    assert root.import_ == "" and root.base_story == "dev-story"
    assert root.overrides.world == {"test_cmd": "make test"}


def test_anchors_and_merge_keys_are_fine_in_moderation(tmp_path):
    write(tmp_path, """\
        harness_profiles:
          base: &base {backend: claude, model: opus}
          fast:
            <<: *base
            model: haiku
        default_profile: fast
    """)
    profiles = load_config(tmp_path).extra["harness_profiles"]
    assert profiles["fast"] == {"backend": "claude", "model": "haiku"}


def test_unknown_keys_are_warnings_not_errors(tmp_path):
    write(tmp_path, "storydirs: [a]\nmining:\n  enabled: true\n  candence: 5s\n")
    config = load_config(tmp_path)
    assert [(w.key, w.line, w.column) for w in config.warnings] == [("storydirs", 1, 1), ("mining.candence", 4, 3)]
    assert config.extra == {"storydirs": ["a"]}


# --- the local file ---------------------------------------------------------------------------


def test_local_file_counts_only_where_kitsoki_reads_it(tmp_path):
    # kitsoki's mergeConfig: story_dirs, default_profile, project_profile, intercept and
    # harness_profiles come from the local file; its mining: and root: are ignored (and we say so).
    base = write(tmp_path, GOOD.replace("  claude-native: {backend: claude, model: opus}\n",
                                        "  claude-native: {backend: claude, model: opus}\n  b: {backend: codex}\n"))
    local = write(tmp_path, """\
        story_dirs: [./mine]
        harness_profiles:
          b: {backend: copilot}
        mining:
          cadence: 1m30s
        root:
          overrides:
            world:
              judge_mode: human
    """, LOCAL_CONFIG_FILE)
    config = load_config(tmp_path)

    assert config.source_files == [base, local]
    assert config.story_dirs == ["./mine"]
    profiles = config.extra["harness_profiles"]
    assert profiles["b"] == {"backend": "copilot"} and "claude-native" in profiles  # merged by profile name
    assert config.mining.cadence_seconds == 45.0  # the base's; the local mining: is ignored
    assert config.root.overrides.world == {"judge_mode": "llm_then_human", "base_branch": "trunk"}
    ignored = {(w.key, w.file) for w in config.warnings if "ignored" in w.message}
    assert ignored == {("mining", str(local)), ("root", str(local))}


def test_problems_in_an_ignored_local_block_do_not_count(tmp_path):
    write(tmp_path, GOOD)
    write(tmp_path, "# mine\nmining:\n  first_pass_sample: -1\n", LOCAL_CONFIG_FILE)
    assert load_config(tmp_path).mining.first_pass_sample == 8


def test_a_linked_worktree_without_a_local_file_uses_the_primary_checkouts(tmp_path):
    primary, linked = tmp_path / "main", tmp_path / "wt"
    primary.mkdir()
    linked.mkdir()
    write(primary, "story_dirs: [./a]\n")
    local = write(primary, "story_dirs: [./from-primary]\n", LOCAL_CONFIG_FILE)
    (primary / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (primary / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    write(linked, "story_dirs: [./a]\n")
    (linked / ".git").write_text(f"gitdir: {primary / '.git' / 'worktrees' / 'wt'}\n")
    config = load_config(linked)
    assert config.story_dirs == ["./from-primary"] and config.source_files[-1] == local
    write(linked, "story_dirs: [./own]\n", LOCAL_CONFIG_FILE)
    assert load_config(linked).story_dirs == ["./own"]


# --- one bad value each -----------------------------------------------------------------------

BAD_VALUES = [
    pytest.param(mining('cadence: "45 seconds"\n'), 3, 12, "mining.cadence",
                 '"45 seconds" is not a Go duration: unknown unit " seconds"', id="cadence-not-a-duration"),
    pytest.param(mining("cadence: 30\n"), 3, 12, "mining.cadence", '"30" is not a Go duration: a number has no unit',
                 id="cadence-without-unit"),
    pytest.param(mining("first_pass_sample: -1\n"), 3, 22, "mining.first_pass_sample", "-1 must not be negative",
                 id="negative-sample"),
    pytest.param(mining('first_pass_sample: "8"\n'), 3, 22, "mining.first_pass_sample",
                 'expected a whole number, got a string ("8")', id="sample-as-string"),
    pytest.param(mining("priority_threshold: -0.5\n"), 3, 23, "mining.priority_threshold",
                 "-0.5 must not be negative", id="negative-threshold"),
    pytest.param(mining("priority_threshold: high\n"), 3, 23, "mining.priority_threshold",
                 'expected a number, got a string ("high")', id="threshold-as-string"),
    pytest.param(mining("priority_threshold: .nan\n"), 3, 23, "mining.priority_threshold", "not a number",
                 id="threshold-nan"),
    pytest.param(mining("transcript_dirs: /tmp/extra\n"), 3, 20, "mining.transcript_dirs",
                 'expected a list of strings, got a string ("/tmp/extra")', id="transcript-dirs-not-a-list"),
    pytest.param(mining("transcript_dirs: [/a, {b: c}]\n"), 3, 25, "mining.transcript_dirs[1]",
                 "expected a string, got a mapping", id="transcript-dir-not-a-string"),
    pytest.param(mining("mined_through: {slug: yesterday}\n"), 3, 25, "mining.mined_through.slug",
                 'expected a whole number, got a string ("yesterday")', id="watermark-not-a-number"),
    pytest.param("mining:\n  enabled: maybe\n", 2, 12, "mining.enabled",
                 'expected true or false, got a string ("maybe")', id="enabled-not-a-bool"),
    pytest.param("mining: [enabled]\n", 1, 9, "mining", "expected a mapping, got a list", id="mining-not-a-mapping"),
    pytest.param("story_dirs: ./stories\n", 1, 13, "story_dirs", "expected a list of strings",
                 id="story-dirs-not-a-list"),
    pytest.param("root:\n  import: example-app\n", 2, 11, "root.import",
                 '"example-app" is not a known base story (kitsoki v1 supports only dev-story)',
                 id="non-dev-story-import"),
    pytest.param("root:\n  overrides:\n    bindings:\n      frobnicate: host.x\n", 4, 7,
                 "root.overrides.bindings.frobnicate",
                 '"frobnicate" is not a dev-story host interface (one of ticket, vcs, ci, workspace, transport)',
                 id="unknown-binding-iface"),
    pytest.param("root:\n  overrides:\n    bindings:\n      vcs: {handler: host.git}\n", 4, 12,
                 "root.overrides.bindings.vcs", "expected a string, got a mapping", id="binding-not-a-string"),
    pytest.param("root:\n  overrides:\n    world:\n      judge_mod: llm\n", 4, 7, "root.overrides.world.judge_mod",
                 '"judge_mod" is not a dev-story world key; did you mean judge_mode?', id="unknown-world-key"),
    pytest.param("root:\n  overrides:\n    synonyms:\n      go_main: home\n", 4, 16,
                 "root.overrides.synonyms.go_main", 'expected a list of strings, got a string ("home")',
                 id="synonyms-not-a-list"),
    pytest.param("root: dev-story\n", 1, 7, "root", 'expected a mapping, got a string ("dev-story")',
                 id="root-not-a-mapping"),
    pytest.param("default_profile: fast\nharness_profiles: {slow: {}}\n", 1, 18, "default_profile",
                 '"fast" names no declared harness profile (slow)', id="default-profile-undeclared"),
    pytest.param("story_dirs: [a]\nstory_dirs: [b]\n", 2, 1, "story_dirs", "mapping key \"story_dirs\" already defined at [1:1]",
                 id="duplicate-key"),
]


@pytest.mark.parametrize(("text", "line", "column", "key", "message"), BAD_VALUES)
def test_each_bad_value_is_named_with_file_line_column_and_key(tmp_path, text, line, column, key, message):
    path = write(tmp_path, text)
    error = load_error(tmp_path)
    assert isinstance(error, ValueError)
    [issue] = error.issues
    assert (issue.file, issue.line, issue.column, issue.key) == (str(path), line, column, key)
    assert message in issue.message
    assert f"{path}:{line}:{column}: {key}: " in str(error)


# --- whole-file problems ----------------------------------------------------------------------


def test_yaml_syntax_error_names_file_line_and_column(tmp_path):
    path = write(tmp_path, "story_dirs: [./stories\nmining:\n  enabled: true\n")
    [issue] = load_error(tmp_path).issues
    assert (issue.file, issue.line, issue.column, issue.key) == (str(path), 2, 7, "")
    assert issue.message.startswith("YAML syntax error: ")
    assert "line 1, column 13" in issue.message  # where the unclosed list began
    assert str(issue).startswith(f"{path}:2:7: YAML syntax error")


def test_syntax_errors_in_both_files_are_reported_together(tmp_path):
    base = write(tmp_path, "a: [\n")
    local = write(tmp_path, "b: {\n", LOCAL_CONFIG_FILE)
    assert [issue.file for issue in load_error(tmp_path).issues] == [str(base), str(local)]


def test_file_too_large_is_refused_unread(tmp_path):
    path = tmp_path / CONFIG_FILE
    path.write_bytes(b"# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    [issue] = load_error(tmp_path).issues
    assert (issue.file, issue.line, issue.column) == (str(path), 1, 1)
    assert "1 MiB" in issue.message and str(path.stat().st_size) in issue.message
    assert str(issue).startswith(f"{path}:1:1: is ")


def test_missing_config_file_is_an_empty_config_as_in_kitsoki(tmp_path):
    config = load_config(tmp_path)
    assert config.story_dirs == ["./stories"] and config.source_files == []
    assert any(f"no {CONFIG_FILE} in {tmp_path}" in w.message for w in config.warnings)


def test_kitsoki_accepts_a_negative_cadence_and_truncates_a_fractional_sample(tmp_path):
    write(tmp_path, mining("cadence: -1s\nfirst_pass_sample: 2.5\n"))
    config = load_config(tmp_path)
    assert (config.mining.cadence, config.mining.cadence_seconds, config.mining.first_pass_sample) == ("-1s", 0.0, 2)
    assert any(w.key == "mining.cadence" and "negative" in w.message for w in config.warnings)


def test_alias_bomb_is_refused(tmp_path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    path = write(tmp_path, "\n".join(lines) + "\n")
    [issue] = load_error(tmp_path).issues
    assert issue.file == str(path) and "aliases (*name) that repeat large anchors are refused" in issue.message


def test_self_referencing_alias_is_refused(tmp_path):
    write(tmp_path, "loop: &loop [*loop]\n")
    [issue] = load_error(tmp_path).issues
    assert "unknown alias *loop" in issue.message and (issue.line, issue.column) == (1, 14)


@pytest.mark.parametrize("depth", [MAX_YAML_DEPTH + 1, 500_000])
def test_deep_flow_nesting_is_refused_where_it_happens(tmp_path, depth):
    write(tmp_path, "x: " + "[" * depth + "]" * depth + "\n")
    [issue] = load_error(tmp_path).issues
    assert (issue.line, issue.column) == (1, 4 + MAX_YAML_DEPTH)
    assert issue.message.startswith("YAML is nested too deeply")


def test_deep_block_nesting_is_refused(tmp_path):
    write(tmp_path, "".join(" " * level + "a:\n" for level in range(MAX_YAML_DEPTH + 5)))
    [issue] = load_error(tmp_path).issues
    # the document's own mapping, then MAX_YAML_DEPTH nested ones: the next is refused
    assert issue.line == MAX_YAML_DEPTH + 2 and "nested too deeply" in issue.message


def test_a_flood_of_tokens_is_refused_quickly(tmp_path):
    write(tmp_path, "x: [" + "a, " * MAX_YAML_TOKENS + "]\n")
    [issue] = load_error(tmp_path).issues
    assert f"more than {MAX_YAML_TOKENS} tokens" in issue.message


def test_not_utf8_is_refused_with_its_place(tmp_path):
    (tmp_path / CONFIG_FILE).write_bytes(b"story_dirs:\n  - caf\xe9\n")
    [issue] = load_error(tmp_path).issues
    assert (issue.line, issue.column) == (2, 8) and "not UTF-8" in issue.message


def test_top_level_must_be_a_mapping(tmp_path):
    write(tmp_path, "- story_dirs\n")
    [issue] = load_error(tmp_path).issues
    assert (issue.line, issue.column, issue.key) == (1, 1, "")
    assert "top level must be a mapping" in issue.message


def test_unsafe_tags_are_not_constructed(tmp_path):
    write(tmp_path, "story_dirs: [!!python/object/apply:os.system ['true']]\n")
    [issue] = load_error(tmp_path).issues
    assert issue.key == "story_dirs[0]"


# --- collecting ---------------------------------------------------------------------------------


def test_every_issue_of_every_file_is_reported_at_once(tmp_path):
    base = write(tmp_path, """\
        mining:
          enabled: true
          cadence: soon
          first_pass_sample: -2
          priority_threshold: "1"
        root:
          import: other
          overrides:
            bindings: {pager: host.x}
            world: {nope: 1, judge_mode: human}
    """)
    local = write(tmp_path, "story_dirs: {a: b}\n", LOCAL_CONFIG_FILE)
    error = load_error(tmp_path)
    assert [(i.file, i.line, i.key) for i in error.issues] == [
        (str(base), 3, "mining.cadence"),
        (str(base), 4, "mining.first_pass_sample"),
        (str(base), 5, "mining.priority_threshold"),
        (str(base), 7, "root.import"),
        (str(base), 9, "root.overrides.bindings.pager"),
        (str(base), 10, "root.overrides.world.nope"),
        (str(local), 1, "story_dirs"),
    ]
    assert len(str(error).splitlines()) == 7


# --- disabled mining --------------------------------------------------------------------------


@pytest.mark.parametrize("enabled", ["enabled: false\n", "", "enabled: off\n"])
def test_disabled_mining_block_is_not_validated(tmp_path, enabled):
    write(tmp_path, "mining:\n" + textwrap.indent(
        enabled + "cadence: not-a-duration\nfirst_pass_sample: -1\nmined_through: {slug: 1700000000}\n", "  "))
    m = load_config(tmp_path).mining
    assert not m.enabled
    # Unusable values fall back to defaults, so even a disabled block reads as a usable config.
    assert (m.cadence, m.first_pass_sample, m.priority_threshold, m.transcript_dirs) == ("30s", 12, 0.0, [])
    assert m.mined_through == {"slug": 1700000000}


def test_a_disabled_mining_block_with_a_type_error_is_still_refused(tmp_path):
    # kitsoki's decode fails on the type before it ever looks at `enabled`.
    write(tmp_path, "mining:\n  enabled: false\n  priority_threshold: high\n  transcript_dirs: /x\n")
    keys = [issue.key for issue in load_error(tmp_path).issues]
    assert keys == ["mining.priority_threshold", "mining.transcript_dirs"]


def test_absent_mining_block_is_disabled(tmp_path):
    write(tmp_path, "story_dirs: [./stories]\n")
    assert load_config(tmp_path).mining == MiningConfig()


# --- the models enforce the same rules when built in code ----------------------------------------


@pytest.mark.parametrize("kwargs", [
    {"cadence": "1"}, {"first_pass_sample": -1}, {"priority_threshold": -0.1},
    {"first_pass_sample": "8"}, {"priority_threshold": math.nan},
])
def test_mining_model_rejects_what_the_loader_rejects(kwargs):
    with pytest.raises(ValidationError):
        MiningConfig(**kwargs)


def test_root_models_reject_what_the_loader_rejects():
    with pytest.raises(ValidationError, match="not a dev-story world key"):
        RootOverrides(world={"bogus": 1})
    with pytest.raises(ValidationError, match="not a dev-story host interface"):
        RootOverrides(bindings={"pager": "host.x"})
    with pytest.raises(ValidationError, match="not a known base story"):
        RootConfig(import_="example-app")
    assert RootOverrides(world={key: None for key in DEV_STORY_WORLD_KEYS}).world


def test_world_keys_table_matches_the_reference():
    assert len(DEV_STORY_WORLD_KEYS) == 160
    assert DEV_STORY_WORLD_KEYS["judge_mode"] == "string"
    assert DEV_STORY_WORLD_KEYS["cost_budget_usd"] == "number"


# --- find_workspace -----------------------------------------------------------------------------


def test_find_workspace_walks_up_from_a_folder_or_a_file(tmp_path):
    write(tmp_path, "")
    story = tmp_path / "stories" / "demo"
    story.mkdir(parents=True)
    (story / "app.yaml").write_text("app: {id: demo}\n")
    assert find_workspace(story) == tmp_path.resolve()
    assert find_workspace(story / "app.yaml") == tmp_path.resolve()
    assert find_workspace(tmp_path) == tmp_path.resolve()


def test_find_workspace_nearest_wins_and_none_when_absent(tmp_path):
    inner = tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    write(tmp_path / "outer", "")
    write(inner, "")
    assert find_workspace(inner / "deeper") == inner.resolve()
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    found = find_workspace(lonely)
    assert found is None or not str(found).startswith(str(tmp_path))


# --- Go durations -------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds"), [
    ("0", 0.0), ("-0", 0.0), ("+0", 0.0), ("0s", 0.0),
    ("30s", 30.0), ("+5s", 5.0), ("-1s", -1.0), ("1.5h", 5400.0), ("300ms", 0.3),
    ("1h30m", 5400.0), ("1h15m30.5s", 4530.5), (".5s", 0.5), ("1.s", 1.0), ("1.0s", 1.0),
    ("2h45m", 9900.0), ("1ns", 1e-9), ("1us", 1e-6), ("1\u00b5s", 1e-6), ("1\u03bcs", 1e-6),
    ("1h1m1s1ms1us1ns", 3661.001001001), ("3m3m", 360.0), ("0.3333333333333333333h", 1200.0),
    ("9223372036854775807ns", 9223372036.854775807), ("-9223372036854775808ns", -9223372036.854775808),
])
def test_go_duration_valid(text, seconds):
    assert parse_go_duration(text) == pytest.approx(seconds, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("text", "reason"), [
    ("", "it is empty"), ("-", "it is empty"), ("+", "it is empty"),
    ("1", "a number has no unit"), ("1.5", "a number has no unit"), ("1h30", "a number has no unit"),
    ("s", "expected a number"), (" 1s", "expected a number"), ("1s ", 'unknown unit "s "'),
    ("1x", 'unknown unit "x"'), ("1 h", 'unknown unit " h"'), ("1H", 'unknown unit "H"'), ("1sec", 'unknown unit "sec"'),
    (".", "at least one digit"), (".s", "at least one digit"), ("-.s", "at least one digit"),
    ("9223372036854775808ns", "out of range"), ("106751991167301d", 'unknown unit "d"'), ("3000000h", "out of range"),
])
def test_go_duration_invalid(text, reason):
    with pytest.raises(ValueError) as caught:
        parse_go_duration(text)
    assert isinstance(caught.value, DurationError)
    assert reason in str(caught.value) and str(caught.value).startswith(f'"{text}" is not a Go duration: ')


# --- whatever the files hold, the caller gets a config or a ConfigError ------------------------

yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats()
    | st.text(max_size=12) | st.sampled_from(["30s", "-1s", "1.s", "dev-story", "yes", "vcs", "judge_mode"]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
    max_leaves=10,
)
config_keys = st.sampled_from([
    "story_dirs", "default_profile", "project_profile", "harness_profiles", "mining", "root", "other",
])
block_keys = st.sampled_from([
    "enabled", "cadence", "first_pass_sample", "priority_threshold", "transcript_dirs", "mined_through",
    "import", "overrides", "bindings", "world", "synonyms", "transport", "judge_mode", "go_main",
])
config_shaped = st.dictionaries(
    config_keys,
    yaml_values | st.dictionaries(block_keys, yaml_values | st.dictionaries(block_keys, yaml_values, max_size=3),
                                  max_size=5),
    max_size=5,
)


def load_or_config_error(base: bytes, local: bytes | None = None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / CONFIG_FILE).write_bytes(base)
        if local is not None:
            (workspace / LOCAL_CONFIG_FILE).write_bytes(local)
        try:
            config = load_config(workspace)
        except ConfigError as error:
            assert error.issues and all(issue.line >= 1 and issue.column >= 1 for issue in error.issues)
        else:
            assert config.mining.cadence_seconds >= 0


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_a_config_or_a_config_error(raw):
    load_or_config_error(raw)


def as_yaml(document) -> bytes:
    # JSON is YAML, once the non-finite floats are spelled the YAML way.
    text = json.dumps(document, allow_nan=True)
    return text.replace("-Infinity", "-.inf").replace("Infinity", ".inf").replace("NaN", ".nan").encode()


@settings(max_examples=100, deadline=None)
@given(config_shaped, st.none() | config_shaped)
def test_config_shaped_documents_give_a_config_or_a_config_error(base, local):
    load_or_config_error(as_yaml(base), None if local is None else as_yaml(local))


@pytest.mark.parametrize("text, refused", [
    # Checked with the real binary (`kitsoki materialize` reads .kitsoki.yaml first): an unset ${VAR}
    # refuses the config only in the default_profile; any other profile is dropped with a warning.
    ('default_profile: a\nharness_profiles:\n  a:\n    backend: claude\n    env: { K: "${KM_UNSET_X}" }\n',
     "harness_profiles.a: env var KM_UNSET_X referenced in env.K not set"),
    ('harness_profiles:\n  a:\n    backend: claude\n    env: { K: "${KM_UNSET_X}" }\n', None),
    ('default_profile: b\nharness_profiles:\n  a:\n    backend: claude\n    env: { K: "${KM_UNSET_X}" }\n'
     '  b:\n    backend: claude\n', None),
    ('default_profile: a\nharness_profiles:\n  a:\n    backend: claude\n    env: { K: "$KM_UNSET_X and ${ALSO" }\n',
     None),  # only `${NAME}` is expanded; an unclosed `${` is literal
])
def test_an_unset_variable_in_harness_profiles_is_refused_only_where_kitsoki_refuses_it(tmp_path, text, refused):
    write(tmp_path, text)
    if refused is None:
        config = load_config(tmp_path, env={"HOME": "/home/u"})
        assert "a" not in config.harness_profiles or "${ALSO" in text
        return
    assert refused in str(load_error(tmp_path))
