"""Small stories, one per kitsoki loader rule: what kitsoki loads and what it refuses, with its reason.

Written from kitsoki's own cases (internal/app/*_test.go and testdata at 1f4abf0e): each case is a
set of files (`app.yaml` is the story under test) and None when kitsoki loads it, else a piece of
the reason kitsoki gives. tests/test_story.py loads each with our loader; the same table was run
through `kitsoki validate` to check the verdicts.
"""

from __future__ import annotations

HEAD = "app: { id: t, version: 0.1.0 }\nroot: a\n"
GO = "intents:\n  go: { examples: [go] }\n"


def story(body: str, head: str = HEAD + GO) -> str:
    return head + body


CASES: dict[str, tuple[dict[str, str], str | None]] = {
    # --- decoding is strict -------------------------------------------------------------------
    "unknown-state-key": ({"app.yaml": story("states:\n  a:\n    descripton: typo\n")}, 'unknown field "descripton"'),
    "unknown-top-key": ({"app.yaml": story("colour: red\nstates:\n  a: {}\n")}, 'unknown field "colour"'),
    "on-is-a-map-of-lists": ({"app.yaml": story("states:\n  a:\n    on:\n      go: { target: a }\n")},
                             "mapping was used where sequence is expected"),
    "bool-field-takes-only-bools": ({"app.yaml": story("states:\n  a:\n    terminal: yes\n")},
                                    "cannot unmarshal string into Go struct field AppDef.States of type bool"),
    "string-field-takes-any-scalar": ({"app.yaml": story("states:\n  a:\n    description: 5\n")}, None),
    "int-field-takes-a-whole-float": ({"app.yaml": story("states:\n  a: {}\n", HEAD +
                                                          "intents:\n  go: { priority: 2.0 }\n")}, None),
    "duplicate-key": ({"app.yaml": story("states:\n  a: {}\n", HEAD + "intents:\n  go: {}\n  go: {}\n")},
                      'mapping key "go" already defined at [4:3]'),
    "world-var-extra-keys-pass": ({"app.yaml": story("world:\n  x: { type: string, default: '', description: d }\n"
                                                     "states:\n  a: {}\n")}, None),
    # --- metadata and root --------------------------------------------------------------------
    "app-id-required": ({"app.yaml": "app: { version: 1 }\nroot: a\nstates:\n  a: {}\n"}, "app.id is required"),
    "root-required": ({"app.yaml": "app: { id: t }\nstates:\n  a: {}\n"}, "root: unsupported value type <nil>"),
    "root-must-exist": ({"app.yaml": "app: { id: t }\nroot: b\nstates:\n  a: {}\n"},
                        'root: state "b" is not declared in states'),
    # --- on: and targets ------------------------------------------------------------------------
    "wildcard-always-valid": ({"app.yaml": story("states:\n  a:\n    on:\n      '*': [{ target: a }]\n")}, None),
    "intent-must-be-declared": ({"app.yaml": story("states:\n  a:\n    on:\n      jump: [{ target: a }]\n")},
                                'on: "jump" — intent not declared in intents library or state.intents'),
    "state-local-intent": ({"app.yaml": story("states:\n  a:\n    intents:\n      hop: {}\n    on:\n"
                                              "      hop: [{ target: a }]\n")}, None),
    "ancestor-intent-does-not-count": ({"app.yaml": story(
        "states:\n  a:\n    type: compound\n    initial: b\n    intents:\n      hop: {}\n    states:\n      b:\n"
        "        on:\n          hop: [{ target: a }]\n")}, 'on: "hop" — intent not declared'),
    "targets-are-absolute": ({"app.yaml": story("states:\n  a:\n    type: compound\n    initial: b\n    states:\n"
                                                "      b:\n        on:\n          go: [{ target: c }]\n      c: {}\n")},
                             'transition target "c" (resolved: "c") does not exist'),
    "relative-and-dotted-targets": ({"app.yaml": story(
        "states:\n  a:\n    type: compound\n    initial: b\n    states:\n      b:\n        on:\n"
        "          go: [{ target: ../c }, { target: a.c }, { target: a/c }, { target: . }]\n      c: {}\n")}, None),
    "template-target-passes": ({"app.yaml": story("states:\n  a:\n    on:\n      go: [{ target: '{{ world.t }}' }]\n")},
                               None),
    # --- compound and parallel --------------------------------------------------------------------
    "compound-initial-must-exist": ({"app.yaml": story("states:\n  a:\n    type: compound\n    initial: z\n"
                                                       "    states:\n      b: {}\n")}, 'initial child "z" does not exist'),
    "parallel-needs-two-regions": ({"app.yaml": story("states:\n  a:\n    type: parallel\n    states:\n      r1: {}\n")},
                                   "parallel state must declare at least 2 child regions (got 1)"),
    "parallel-has-no-initial": ({"app.yaml": story("states:\n  a:\n    type: parallel\n    initial: r1\n    states:\n"
                                                   "      r1: {}\n      r2: {}\n")}, "parallel state must not declare initial"),
    # --- other load checks ------------------------------------------------------------------------
    "relevant-world-keys": ({"app.yaml": story("states:\n  a:\n    relevant_world: [nope]\n")},
                            'relevant_world key "nope" is not declared in world schema'),
    "relevant-world-reserved-keys": ({"app.yaml": story("states:\n  a:\n    relevant_world: [last_error, host_error]\n")},
                                     None),
    "default-intent-needs-an-arm": ({"app.yaml": story("states:\n  a:\n    default_intent: go\n")},
                                    'default_intent "go" has no matching on: arc in this state'),
    "default-intent-one-string-slot": ({"app.yaml": story("states:\n  a:\n    default_intent: go\n    on:\n"
                                                          "      go: [{ target: a }]\n")},
                                       "must declare exactly one required string slot"),
    "hosts-allow-list": ({"app.yaml": story("hosts: [host.run]\nstates:\n  a:\n    on_enter:\n"
                                            "      - invoke: host.git\n")}, 'invoke "host.git" is not declared in app hosts'),
    "timeout-after-parses": ({"app.yaml": story("states:\n  a:\n    timeout: { after: soon, target: a }\n")},
                             'timeout.after "soon"'),
    "timeout-days": ({"app.yaml": story("states:\n  a:\n    timeout: { after: 11d, target: a }\n")}, None),
    "timeout-target-exists": ({"app.yaml": story("states:\n  a:\n    timeout: { after: 1m, target: z }\n")},
                              'transition target "z" (resolved: "z") does not exist'),
    "decider-values": ({"app.yaml": story("states:\n  a:\n    decider: robot\n")}, 'decider "robot" is invalid'),
    "exit-without-exits-block": ({"app.yaml": story("states:\n  a:\n    on:\n      go: [{ target: '@exit:gone' }]\n")},
                                 'transition target "@exit:gone" (resolved: "@exit:gone") does not exist'),
    "exit-must-be-declared": ({"app.yaml": story("exits:\n  done: {}\nstates:\n  a:\n    on:\n"
                                                 "      go: [{ target: '@exit:gone' }]\n")},
                              "@exit:gone referenced but not declared in exits:"),
    "exit-synthesised": ({"app.yaml": story("exits:\n  done: {}\nstates:\n  a:\n    on:\n"
                                            "      go: [{ target: '@exit:done' }]\n")}, None),
    "effect-target-only-in-on-complete": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - target: a\n")},
                                          "target: is only allowed inside on_complete"),
    # --- routing (loader_routing_test.go) ---------------------------------------------------------
    "template-naming-undeclared-slots-loads": ({"app.yaml": story(
        "states:\n  a:\n    on:\n      go: [{ target: a }]\n",
        HEAD + "intents:\n  go: { synonyms: [wade, 'buy {items} for {total_cost}'] }\n")}, None),
    "slot-synonyms-only-on-enum": ({"app.yaml": story("states:\n  a: {}\n", HEAD +
        "intents:\n  go:\n    slots:\n      total_cost: { type: int, synonyms: { a: [b] } }\n")},
        "synonyms: is only valid on enum slots"),
    "slot-synonyms-key-in-values": ({"app.yaml": story("states:\n  a: {}\n", HEAD +
        "intents:\n  go:\n    slots:\n      colour: { type: enum, values: [red], synonyms: { purple: [violet] } }\n")},
        'synonyms key "purple" is not in values'),
    "empty-synonym": ({"app.yaml": story("states:\n  a: {}\n", HEAD + "intents:\n  go: { synonyms: [wade, ' '] }\n")},
                      "synonyms[1] is empty"),
    "routing-cache-max-age-is-a-duration": ({"app.yaml": story("routing: { cache_max_age: a week }\nstates:\n  a: {}\n")},
                                            'app.Duration: app.ParseDuration: "a week"'),
    "routing-cache-max-age-days": ({"app.yaml": story("routing: { cache_max_age: 30d }\nstates:\n  a: {}\n")}, None),
    "semantic-bar-order": ({"app.yaml": story("routing: { semantic_high_bar: 0.5, semantic_mid_bar: 0.7 }\n"
                                              "states:\n  a: {}\n")}, "must be greater than routing.semantic_mid_bar"),
    # --- include ------------------------------------------------------------------------------------
    "include-duplicate-intent": ({"app.yaml": story("include: [rooms/*.yaml]\nstates:\n  a: {}\n"),
                                  "rooms/r.yaml": "intents:\n  go: {}\n"}, 'include: intent "go" is already declared'),
    "include-duplicate-world": ({"app.yaml": story("include: [rooms/*.yaml]\nworld:\n  x: { type: int }\nstates:\n  a: {}\n"),
                                 "rooms/r.yaml": "world:\n  x: { type: int }\n"},
                                'include: world variable "x" is already declared'),
    "include-missing-literal-is-empty": ({"app.yaml": story("include: [rooms/none.yaml]\nstates:\n  a: {}\n")}, None),
    "include-room-is-strict": ({"app.yaml": story("include: [rooms/*.yaml]\nstates:\n  a: {}\n"),
                                "rooms/r.yaml": "states:\n  b:\n    colour: red\n"}, 'unknown field "colour"'),
    # --- phases ---------------------------------------------------------------------------------------
    "phases-expand": ({"app.yaml": story(
        "phase_templates:\n  step:\n    parameters: { label: { type: string, required: true } }\n    states:\n"
        "      '{id}_executing':\n        description: '{{ tpl.label }}'\n        on:\n"
        "          go: [{ target: '{{ phase.next.done }}' }]\n      '{id}_error': { terminal: true }\n"
        "phases:\n  template: step\n  graph:\n    p1: { label: one, next: { done: p2 } }\n"
        "    p2: { label: two, next: { done: terminated } }\n"
        "states:\n  a:\n    on:\n      go: [{ target: p1_executing }]\n  terminated: { terminal: true }\n")}, None),
    "phases-missing-template": ({"app.yaml": story("phase_templates: {}\nphases:\n  template: nope\n  graph:\n    p1: {}\n"
                                                   "states:\n  a: {}\n")}, 'phases.template "nope": not found'),
    "phases-required-parameter": ({"app.yaml": story(
        "phase_templates:\n  step:\n    parameters: { label: { type: string, required: true } }\n    states: {}\n"
        "phases:\n  template: step\n  graph:\n    p1: {}\nstates:\n  a: {}\n")},
        'missing required template parameter "label"'),
    # --- imports ---------------------------------------------------------------------------------------
    "import-folds": ({"app.yaml": story(
        "world:\n  goal: { type: string, default: x }\n"
        "imports:\n  kid:\n    source: ../kid\n    world_in: { target: '{{ world.goal }}' }\n"
        "    intents: { import: [poke] }\n    exits: { done: { to: a, set: { goal: done } } }\n"
        "    host_bindings: { transport: host.append_to_file }\n"
        "states:\n  a:\n    on:\n      go: [{ target: kid }]\n      poke: [{ target: a }]\n"),
        "../kid/app.yaml": "app: { id: kid }\nroot: k1\nintents:\n  poke: {}\n  next: {}\n"
                           "exports: { intents: [poke] }\nexits: { done: {} }\n"
                           "world:\n  target: { type: string, default: '' }\n"
                           "host_interfaces:\n  transport: { default: host.x, operations: { post: {} } }\n"
                           "states:\n  k1:\n    on:\n      next: [{ target: k2, when: \"world.target != ''\" }]\n"
                           "  k2:\n    on_enter:\n      - invoke: iface.transport.post\n"
                           "    on:\n      next: [{ target: '@exit:done' }]\n"}, None),
    "import-lift-needs-export": ({"app.yaml": story(
        "imports:\n  kid: { source: ../kid, intents: { import: [poke] } }\nstates:\n  a: {}\n"),
        "../kid/app.yaml": "app: { id: kid }\nroot: k1\nintents:\n  poke: {}\nstates:\n  k1: {}\n"},
        "intents.import.poke: child does not declare it in exports.intents"),
    "import-world-in-key": ({"app.yaml": story("imports:\n  kid: { source: ../kid, world_in: { nope: x } }\n"
                                               "states:\n  a: {}\n"),
                             "../kid/app.yaml": "app: { id: kid }\nroot: k1\nstates:\n  k1: {}\n"},
                            'world_in.nope: child does not declare world key "nope"'),
    "import-exit-must-be-mapped": ({"app.yaml": story("imports:\n  kid: { source: ../kid }\nstates:\n  a: {}\n"),
                                    "../kid/app.yaml": "app: { id: kid }\nroot: k1\nintents:\n  go: {}\nexits: { done: {} }\n"
                                                       "states:\n  k1:\n    on:\n      go: [{ target: '@exit:done' }]\n"},
                                   "child uses @exit:done but parent does not map it"),
    "import-no-reach-into-child": ({"app.yaml": story("imports:\n  kid: { source: ../kid }\nstates:\n  a:\n    on:\n"
                                                      "      go: [{ target: kid.k2 }]\n"),
                                    "../kid/app.yaml": "app: { id: kid }\nroot: k1\nstates:\n  k1: {}\n  k2: {}\n"},
                                   'reaches into the imported child "kid" past its entry "k1"'),
    "import-alias-shape": ({"app.yaml": story("imports:\n  Kid: { source: ../kid }\nstates:\n  a: {}\n"),
                            "../kid/app.yaml": "app: { id: kid }\nroot: k1\nstates:\n  k1: {}\n"},
                           "imports.Kid: alias must match"),
    "import-cycle": ({"app.yaml": story("imports:\n  kid: { source: ../kid }\nstates:\n  a: {}\n"),
                      "../kid/app.yaml": "app: { id: kid }\nroot: k1\nimports:\n  back: { source: ../t }\n"
                                         "states:\n  k1: {}\n"}, "cycle detected"),
    "import-binding-names-an-interface": ({"app.yaml": story("imports:\n  kid: { source: ../kid, host_bindings: "
                                                             "{ nope: host.x } }\nstates:\n  a: {}\n"),
                                           "../kid/app.yaml": "app: { id: kid }\nroot: k1\nstates:\n  k1: {}\n"},
                                          "host_bindings.nope: no matching host_interface"),
    # --- agents (resolveAgentDecls, per file) ------------------------------------------------------
    "agent-needs-a-prompt": ({"app.yaml": story("agents:\n  w: { tools: [Read] }\nstates:\n  a: {}\n")},
                             'agent "w": one of system_prompt or system_prompt_path is required'),
    "agent-prompt-inline-or-path": ({"app.yaml": story("agents:\n  w: { system_prompt: x, system_prompt_path: p.md }\n"
                                                       "states:\n  a: {}\n")},
                                    "system_prompt and system_prompt_path are mutually exclusive"),
    "agent-prompt-path-must-exist": ({"app.yaml": story("agents:\n  w: { system_prompt_path: prompts/none.md }\n"
                                                        "states:\n  a: {}\n")}, 'agent "w": system_prompt_path'),
    "agent-prompt-path-read-beside-the-file": ({"app.yaml": story("agents:\n  w: { system_prompt_path: prompts/w.md }\n"
                                                                  "states:\n  a: {}\n"),
                                                "prompts/w.md": "You help.\n"}, None),
    "agent-effort-values": ({"app.yaml": story("agents:\n  w: { system_prompt: x, effort: extreme }\nstates:\n  a: {}\n")},
                            'agent "w": effort "extreme" is invalid (valid: low, medium, high, xhigh, max)'),
    "agent-bash-profile-forms": ({"app.yaml": story("agents:\n  w: { system_prompt: x, bash_profile: write-all }\n"
                                                    "states:\n  a: {}\n")},
                                 "app.BashProfileDecl: unrecognised form"),
    "agent-bash-needs-a-profile-for-read-only-verbs": ({"app.yaml": story(
        "agents:\n  w: { system_prompt: x, tools: [Bash] }\nstates:\n  a:\n    on_enter:\n"
        "      - invoke: host.agent.ask\n        with: { agent: w, question: q }\n")},
        'agent "w" declares Bash but no bash_profile'),
    "agent-bash-is-fine-for-task": ({"app.yaml": story(
        "agents:\n  w: { system_prompt: x, tools: [Bash] }\nstates:\n  a:\n    on_enter:\n"
        "      - invoke: host.agent.task\n        with: { agent: w, acceptance: { schema: s.json } }\n")}, None),
    # --- agent verbs (validateAgentVerbCrossChecks, validateAgentRef) ------------------------------
    "task-requires-acceptance-schema": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - invoke: host.agent.task\n"
                                                           "        with: { prompt: do it }\n")},
                                        'state "a" on_enter[0]: host.agent.task requires acceptance.schema to be set in '
                                        "the with: block"),
    "task-acceptance-schema-must-be-a-string": ({"app.yaml": story(
        "states:\n  a:\n    on:\n      go:\n        - target: a\n          effects:\n"
        "            - invoke: host.agent.task\n              with: { acceptance: { schema: 5 } }\n")},
        'state "a" intent "go" arc[0] effect[0]: host.agent.task requires acceptance.schema'),
    "task-without-with-loads": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - invoke: host.agent.task\n")}, None),
    "task-with-an-acceptance-schema-loads": ({"app.yaml": story(
        "agents:\n  w: { system_prompt: x, tools: [Read, Edit, Write, Bash] }\nstates:\n  a:\n    on_enter:\n"
        "      - invoke: host.agent.task\n        with: { agent: w, acceptance: { schema: schemas/r.json },"
        " context: { prompt: do it } }\n")}, None),
    "read-only-verb-refuses-a-mutating-tool": ({"app.yaml": story(
        "agents:\n  w: { system_prompt: x, tools: [Read, Edit] }\nstates:\n  a:\n    on_enter:\n"
        "      - invoke: host.agent.ask\n        with: { agent: w, question: q }\n")},
        'agent "w" declares mutation tool "host.Edit" — not permitted for host.agent.ask (read-only verb)'),
    "extract-refuses-a-mutating-tool-in-on-complete": ({"app.yaml": story(
        "agents:\n  w: { system_prompt: x, tools: [host.Write] }\nstates:\n  a:\n    on_enter:\n"
        "      - invoke: host.run\n        background: true\n        on_complete:\n"
        "          - invoke: host.agent.extract\n            with: { agent: w }\n")},
        'state "a" on_enter[0] on_complete[0]: agent "w" declares mutation tool "host.Write"'),
    "task-network-tool-contradicts-no-side-effect": ({"app.yaml": story(
        "agents:\n  w: { system_prompt: x, tools: [WebFetch], external_side_effect: false }\nstates:\n  a:\n"
        "    on_enter:\n      - invoke: host.agent.task\n        with: { agent: w, acceptance: { schema: s.json } }\n")},
        'agent "w" declares external_side_effect: false but has "host.WebFetch" in tools'),
    "with-agent-only-on-agent-verbs": ({"app.yaml": story("agents:\n  w: { system_prompt: x }\nstates:\n  a:\n"
                                                          "    on_enter:\n      - invoke: host.run\n"
                                                          "        with: { agent: w }\n")},
                                       'with.agent is only meaningful on host.agent.* invocations (got invoke "host.run")'),
    "with-agent-must-be-declared": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - invoke: host.agent.ask\n"
                                                       "        with: { agent: nope }\n")},
                                    'state "a" on_enter[0]: with.agent "nope" is not declared in agents'),
    # --- write_mode, intercept_drive, off-ramps ------------------------------------------------------
    "write-mode-values": ({"app.yaml": story("states:\n  a:\n    write_mode: closed\n")},
                          'state "a": write_mode "closed" is invalid'),
    "write-mode-read-only-needs-an-agent": ({"app.yaml": story("states:\n  a:\n    write_mode: read_only\n")},
                                            "write_mode: read_only is only meaningful on a room that dispatches an agent"),
    "write-mode-read-only-contradicts-a-write-capable-agent": ({"app.yaml": story(
        "agents:\n  w: { system_prompt: x, tools: [WebSearch] }\nstates:\n  a:\n    write_mode: read_only\n"
        "    on_enter:\n      - invoke: host.agent.task\n        with: { agent: w, acceptance: { schema: s.json } }\n")},
        'write_mode: read_only contradicts agent "w" which declares external_side_effect: true'),
    "write-mode-scope-is-engine-reserved": ({"app.yaml": story("states:\n  a:\n    on_enter:\n"
                                                               "      - set: { write_mode_scope: all }\n")},
                                            'state "a" on_enter: set: "write_mode_scope" is engine-reserved'),
    "intercept-drive-values": ({"app.yaml": story("states:\n  a:\n    intercept_drive: go\n")},
                               'state "a": intercept_drive "go" is invalid (the only valid value is "rest")'),
    "off-ramp-never-on-terminal": ({"app.yaml": story("states:\n  a:\n    terminal: true\n    agent_off_ramp: true\n")},
                                   'state "a" declares agent_off_ramp on a terminal: true state'),
    "off-ramp-false-is-off": ({"app.yaml": story("states:\n  a:\n    terminal: true\n    agent_off_ramp: false\n")}, None),
    "off-ramp-shape": ({"app.yaml": story("states:\n  a:\n    agent_off_ramp: { agent: story-explainer, trigger: x }\n")},
                       "agent_off_ramp: must be `true` or an {agent, persona, banner} mapping"),
    "off-ramp-not-a-word": ({"app.yaml": story("states:\n  a:\n    agent_off_ramp: yes please\n")},
                            "agent_off_ramp: must be `true` or an {agent, persona, banner} mapping"),
    "off-ramp-agent-must-be-known": ({"app.yaml": story("states:\n  a:\n    agent_off_ramp: { agent: nope }\n")},
                                     'agent reference "nope" at states.a.agent_off_ramp.agent is undefined'),
    "off-ramp-builtin-agent": ({"app.yaml": story("states:\n  a:\n    agent_off_ramp: { agent: story-explainer }\n")}, None),
    # --- meta modes (validateMetaModes, with kitsoki's built-in story.* group) ------------------------
    "meta-mode-needs-a-trigger": ({"app.yaml": story("meta_modes:\n  x: { agent: story-author }\nstates:\n  a: {}\n")},
                                  'meta_mode "x": trigger is required'),
    "meta-mode-one-default-per-group": ({"app.yaml": story("meta_modes:\n  story.draft: { trigger: draft, agent: "
                                                           "story-author, default: true }\nstates:\n  a: {}\n")},
                                        'meta_mode group "story": 2 modes flagged default: true'),
    "meta-mode-trigger-not-an-intent": ({"app.yaml": story("meta_modes:\n  go: { trigger: go, agent: story-author }\n"
                                                           "states:\n  a: {}\n")},
                                        'meta_mode "go": trigger "go" collides with a declared intent of the same name'),
    "meta-mode-agent-must-be-known": ({"app.yaml": story("meta_modes:\n  tidy: { trigger: tidy, agent: nope }\n"
                                                         "states:\n  a: {}\n")},
                                      'agent reference "nope" at meta_modes.tidy.agent is undefined'),
    # --- agent_plugins and providers ------------------------------------------------------------------
    "plugin-key-prefix": ({"app.yaml": story("agent_plugins:\n  local: { plugin: builtin.local_llm, model: m }\n"
                                             "states:\n  a: {}\n")}, "agent_plugins: key \"local\" must start with 'agent.'"),
    "plugin-known": ({"app.yaml": story("agent_plugins:\n  agent.x: { plugin: magic }\nstates:\n  a: {}\n")},
                     'agent_plugins.agent.x: unknown plugin "magic"'),
    "plugin-env-set": ({"app.yaml": story("agent_plugins:\n  agent.x: { plugin: subprocess, command: c, env: "
                                          "{ K: '${KITSOKI_MINER_SURELY_UNSET}' } }\nstates:\n  a: {}\n")},
                       "agent_plugins.agent.x: env var KITSOKI_MINER_SURELY_UNSET referenced in env.K not set"),
    "provider-not-empty": ({"app.yaml": story("providers:\n  p: { model: '' }\nstates:\n  a: {}\n")},
                           "providers.p: a provider must set model:, effort:, and/or env:"),
    "provider-reference-known": ({"app.yaml": story("agents:\n  w: { system_prompt: x, provider: nope }\n"
                                                    "states:\n  a: {}\n")},
                                 'provider reference "nope" at agents.w.provider is undefined'),
    # --- host.starlark.run (validateStarlarkEffects) ----------------------------------------------------
    "starlark-needs-a-script": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - invoke: host.starlark.run\n"
                                                   "        with: { inputs: {} }\n")},
                                "host.starlark.run requires a non-empty with.script"),
    "starlark-script-must-exist": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - invoke: host.starlark.run\n"
                                                      "        with: { script: scripts/x.star }\n")},
                                   'host.starlark.run script "scripts/x.star" not found'),
    "starlark-input-not-bare": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - invoke: host.starlark.run\n"
                                                   "        with: { script: scripts/x.star, inputs: { n: world.x } }\n"),
                                 "scripts/x.star": "def main(inputs):\n    return {}\n",
                                 "scripts/x.star.yaml": "inputs: {}\n"},
                                'host.starlark.run input "n" is a bare expression "world.x"'),
    # --- views (View.UnmarshalYAML, View.Validate, validateChoiceCrossRefs) ---------------------------
    "view-element-one-kind": ({"app.yaml": story("states:\n  a:\n    view:\n      - { prose: hi, heading: H }\n")},
                              "element has multiple kinds set (prose, heading)"),
    "view-list-needs-items": ({"app.yaml": story("states:\n  a:\n    view:\n      - list: { items: [] }\n")},
                              'state "a": view[0] (list): list requires items: with at least one entry'),
    "view-list-item-not-empty": ({"app.yaml": story("states:\n  a:\n    view:\n      - list: { items: ['', b] }\n")},
                                 "list item: empty string is not allowed"),
    "view-list-item-shape": ({"app.yaml": story("states:\n  a:\n    view:\n      - list: { items: [{ text: b }] }\n")},
                             "list item: must be a string or {label, hint?, when?} object"),
    "view-when-beside-the-kind": ({"app.yaml": story("states:\n  a:\n    view:\n"
                                                     "      - kv: { pairs: { a: b }, when: world.x }\n")},
                                  "kv element: `when:` must be a sibling of `kv:`"),
    "view-kv-values-are-strings": ({"app.yaml": story("states:\n  a:\n    view:\n      - kv: { pairs: { n: 3 } }\n")},
                                   'state "a": view[0] (kv): kv pair 0 (n): value must be a string'),
    "view-banner-needs-text": ({"app.yaml": story("states:\n  a:\n    view:\n      - banner: { subtitle: s }\n")},
                               'state "a": view[0] (banner): banner requires a non-empty text'),
    "view-one-choice": ({"app.yaml": story("states:\n  a:\n    view:\n      - choice: { mode: single, items: [{ label: g, intent: go }] }\n"
                                           "      - choice: { mode: single, items: [{ label: h, intent: go }] }\n"
                                           "    on:\n      go: [{ target: a }]\n")},
                        'state "a": view[1] (choice): only one choice element per view is allowed'),
    "view-choice-intent-declared": ({"app.yaml": story("states:\n  a:\n    view:\n"
                                                       "      - choice: { mode: single, items: [{ label: j, intent: jump }] }\n")},
                                    'state "a": view[0] (choice): items[0]: intent "jump" not declared in state or '
                                    "global intents"),
    "view-choice-slot-declared": ({"app.yaml": story("states:\n  a:\n    view:\n"
                                                     "      - choice: { mode: single, items: [{ label: g, intent: go, slots: { x: 1 } }] }\n")},
                                  'items[0].slots: key "x" is not a declared slot of intent "go"'),
    "view-transition-choice": ({"app.yaml": story("states:\n  a:\n    on:\n      go:\n        - target: a\n"
                                                  "          view:\n            - choice: { mode: single, items: [{ label: j, intent: "
                                                  "jump }] }\n")},
                               'state "a" intent "go": transition view[0] (choice): items[0]: intent "jump" not declared'),
    "view-choice-needs-a-mode": ({"app.yaml": story("states:\n  a:\n    view:\n"
                                                    "      - choice: { items: [{ label: g, intent: go }] }\n"
                                                    "    on:\n      go: [{ target: a }]\n")},
                                 "state \"a\": view[0] (choice): choice: /: missing property 'mode'"),
    # --- expressions compile (validateExprs): guards and templated effect values -----------------
    "expr-guard-must-be-bool": ({"app.yaml": story("states:\n  a:\n    on:\n      go: [{ when: len(world.x), "
                                                   "target: a }]\n")},
                                'guard when "len(world.x)": expr compile "len(world.x)": expected bool, but got int'),
    "expr-coalesce-mixed": ({"app.yaml": story("states:\n  a:\n    on:\n      go: [{ when: 'world.x ?? 0 > 1', "
                                               "target: a }]\n")},
                            "Operator (>) and coalesce expressions (??) cannot be mixed. Wrap either by parentheses. "
                            "(1:14)"),
    "expr-coalesce-in-parens": ({"app.yaml": story("states:\n  a:\n    on:\n      go: [{ when: '(world.x ?? 0) > 1',"
                                                   " target: a }]\n")}, None),
    "expr-pongo-filter-in-set": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - set: { x: \"{{ world.x|"
                                                    "default:'y' }}\" }\n")},
                                 'effect set "x": expr compile "world.x|default:\'y\'": unexpected token '
                                 'Operator(":") (1:16)'),
    "expr-forbidden-root-in-with": ({"app.yaml": story("hosts: [host.run]\nstates:\n  a:\n    on_enter:\n"
                                                       "      - invoke: host.run\n        with: { args: [ok, "
                                                       "'{{ state.path }}'] }\n")},
                                    'effect with "args"[1]: expr whitelist violation in "state.path": member access '
                                    'on forbidden root "state"'),
    "expr-forbidden-builtin": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - set: { x: '{{ filter(world."
                                                  "l, .a > 1) }}' }\n")},
                               'lambda/predicate expressions are not allowed; forbidden built-in function "filter"'),
    "expr-template-blocks-nest": ({"app.yaml": story("states:\n  a:\n    on:\n      go:\n        - target: a\n"
                                                     "          effects: [{ emit_intent: '{{ if world.x }}go' }]\n")},
                                  "effect emit_intent: template: missing 'end' for if block"),
    "expr-on-complete-guard": ({"app.yaml": story("hosts: [host.run]\nstates:\n  a:\n    on_enter:\n      - invoke: "
                                                  "host.run\n        background: true\n        on_complete: "
                                                  "[{ when: '\"yes\"', set: { x: done } }]\n")},
                               'state "a" on_enter[0] on_complete[0]: effect when "\\"yes\\"": expr compile '
                               '"\\"yes\\"": expected bool, but got string'),
    "expr-say-is-not-compiled": ({"app.yaml": story("states:\n  a:\n    on_enter:\n      - say: '{{ if state.path "
                                                    "}}'\n")}, None),
    "expr-what-kitsoki-compiles": ({"app.yaml": story(
        "states:\n  a:\n    on_enter:\n      - set: { x: \"{{ world.x | upper() }}\", n: '{{ (world.n ?? 0) + 1 }}',"
        " l: [\"{{ world.l[1:] }}\", { f: \"{{ world.l?.[0] ?? 'none' }}\" }] }\n"
        "      - say: '{{ range world.l }}- {{ .name }}{{ end }}'\n        when: len(world.l) > 0 && now() != nil\n"
        "    on:\n      go:\n        - when: 1 < world.n < 3 && world.x not in ['a', 'b'] // a comment\n"
        "          target: a\n          effects:\n            - set: { x: \"{{ world.x ?: 'e' }} {{ if world.n > 1 }}"
        "m{{ else }}o{{ end }}\", n: '{{ int(world.n) * 2 ^ 2 }}' }\n"
        "        - when: available('go') && world.x contains 'z' and not ((world.n ?? 0) > 1)\n          target: a\n"
        "        - when: world.x | upper() == 'A' && 1 < world.n < 3\n          target: a\n")}, None),
}
