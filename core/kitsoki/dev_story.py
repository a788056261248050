"""dev-story's intents, as `root.import: dev-story` brings them (constructorfabric/Kitsoki HEAD
1f4abf0e, stories/dev-story/app.yaml, CC0; transcribed in reference/dev-story-facts.md).

The mapper routes mined phrasings against these before proposing a rung-1 synonym, and a rung-1
synonym may only name one of them: kitsoki appends `root.overrides.synonyms` to the instance intent
of that name, so any other name routes nowhere.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple


class DevStoryIntent(NamedTuple):
    description: str
    examples: tuple[str, ...]
    synonyms: tuple[str, ...]


DEV_STORY_INTENTS = MappingProxyType({
    'go_main': DevStoryIntent(
        'Go to the main room.',
        ('main', 'home', 'go home', 'go to main'),
        ()),
    'go_back': DevStoryIntent(
        'Return to the previous room.',
        ('back', 'return'),
        ()),
    'go_inbox': DevStoryIntent(
        'Open the inbox.',
        ('inbox', 'check inbox'),
        ()),
    'go_gitops': DevStoryIntent(
        'Open the git command hub — rebase, commit, merge, worktrees.',
        ('git', 'git ops', 'git commands', 'version control'),
        ()),
    'go_agent': DevStoryIntent(
        'Open the Agent room for Q&A.',
        ('agent', 'ask claude', 'ask a question', 'i have a question', 'ask claude how X works'),
        ()),
    'go_ticket_search': DevStoryIntent(
        'Open ticket search when the operator asks to list, search, choose, or find tickets. Do not use for requests to fix bugs directly.',
        ('tickets', 'ticket search', 'find ticket', 'show tickets', "what's a good ticket to work on?"),
        ()),
    'go_workspace_manager': DevStoryIntent(
        'Open workspace manager.',
        ('workspaces', 'workspace manager', 'list workspaces', 'cleanup worktrees', 'clean up merged branches', 'resume', 'resume my workspace', 'continue where I left off', 'pick up where I left off'),
        ()),
    'go_standup': DevStoryIntent(
        'Prep for standup.',
        ('standup', 'daily', 'prep standup'),
        ()),
    'go_idea': DevStoryIntent(
        'Start or amend an ad hoc design/proposal — draft, review, clarify decisions, resolve proposal questions, or make a proposal ready for human review. No ticket required.',
        ('idea', 'new idea', 'propose', 'proposal', 'ad hoc', 'draft proposal', 'i have an idea', 'work on a proposal', 'new proposal', 'write a proposal', 'design proposal', 'start a design', 'use the design workflow', 'amend existing proposal', 'proposal ready for review', 'human review proposal', 'resolve proposal questions', 'tighten proposal narration', 'audit this proposal', 'fold decisions back into the design', 'make this proposal terse and clear'),
        ()),
    'go_code_review': DevStoryIntent(
        "Review a teammate's PR.",
        ('code review', 'review prs'),
        ()),
    'go_ideas': DevStoryIntent(
        'Open the ideas reviewer — reconcile the backlog and pick something to propose.',
        ('ideas', 'review ideas', 'idea backlog', 'reconcile ideas', 'what should I work on', "writer's block"),
        ()),
    'go_model_eval': DevStoryIntent(
        'Prepare model/harness evaluation reports from local evidence.',
        ('model eval', 'harness eval', 'compare models', 'evaluate harnesses', 'model harness report'),
        ()),
    'go_init': DevStoryIntent(
        'Discover a project profile and review it before onboarding writes happen.',
        ('onboard this project', 'project onboarding', 'init project', 'set up kitsoki for this repo'),
        ()),
    'go_deploy': DevStoryIntent(
        'Open the deploy room.',
        ('deploy', 'ship it'),
        ()),
    'go_observability': DevStoryIntent(
        'Open the observability room.',
        ('logs', 'metrics', 'observability'),
        ()),
    'go_incident': DevStoryIntent(
        'Open the incident room — triage a production alert.',
        ('incident', 'on call', 'we have an outage', 'production is down', 'page received'),
        ()),
    'report_incident': DevStoryIntent(
        'Paste a production alert to triage — severity, blast radius, recommended action.',
        ('disk full on db-primary', '5xx spiking in checkout', 'alert: queue backed up', 'report an incident', 'triage this alert'),
        ()),
    'mitigate': DevStoryIntent(
        'Apply the recommended mitigation now (a known fix — rollback, restart, flag flip).',
        (),
        ()),
    'escalate': DevStoryIntent(
        "Page the owning team / human on-call — the loop can't safely mitigate.",
        (),
        ()),
    'watch': DevStoryIntent(
        'Park the alert and watch — no action warranted yet.',
        (),
        ()),
    'write_postmortem': DevStoryIntent(
        'Write a short, blameless postmortem now the incident is resolved.',
        (),
        ()),
    'triage_mitigate': DevStoryIntent(
        '(internal) triage recommended mitigate — route to the mitigation step.',
        (),
        ()),
    'triage_escalate': DevStoryIntent(
        '(internal) triage recommended escalate — route to the escalation step.',
        (),
        ()),
    'triage_monitor': DevStoryIntent(
        '(internal) triage recommended monitor — park the alert.',
        (),
        ()),
    'start_deploy': DevStoryIntent(
        'Name a deploy target to run preflight and ship a release.',
        ('deploy to staging', 'ship to prod', 'release to prod-us-east', 'deploy staging'),
        ()),
    'ship': DevStoryIntent(
        'Deploy to the target now — preflight is clean.',
        (),
        ()),
    'cancel_deploy': DevStoryIntent(
        "Park the deploy — don't ship.",
        (),
        ()),
    'gate_go': DevStoryIntent(
        '(internal) preflight gate said go — route to the ship choice.',
        (),
        ()),
    'gate_block': DevStoryIntent(
        '(internal) preflight gate said no_go — route to the blocked read-out.',
        (),
        ()),
    'run_verify_deploy': DevStoryIntent(
        '(internal) the deploy landed — run the health verification.',
        (),
        ()),
    'deploy_healthy': DevStoryIntent(
        '(internal) the new release is healthy — keep it.',
        (),
        ()),
    'deploy_unhealthy': DevStoryIntent(
        '(internal) the new release is unhealthy — roll back.',
        (),
        ()),
    'rollback_done': DevStoryIntent(
        '(internal) the rollback landed — show the read-out.',
        (),
        ()),
    'query_signal': DevStoryIntent(
        'Pick a signal / dashboard to query and triage.',
        ('check the error rate', 'query checkout latency', 'look at the queue depth', 'pull the 5xx dashboard'),
        ()),
    'raise_alert': DevStoryIntent(
        'Page the owning team about this signal — it crossed a threshold.',
        (),
        ()),
    'annotate_signal': DevStoryIntent(
        'Record a dashboard annotation for this signal — notable but not page-worthy.',
        (),
        ()),
    'clear_signal': DevStoryIntent(
        "Park the signal — it's nominal, no action needed.",
        (),
        ()),
    'obs_alert': DevStoryIntent(
        '(internal) triage said alert — route to the alert step.',
        (),
        ()),
    'obs_annotate': DevStoryIntent(
        '(internal) triage said annotate — route to the annotation step.',
        (),
        ()),
    'obs_clear': DevStoryIntent(
        '(internal) triage said clear — park the signal.',
        (),
        ()),
    'obs_action_done': DevStoryIntent(
        '(internal) the alert / annotation landed — show the read-out.',
        (),
        ()),
    'draft_doc': DevStoryIntent(
        'Name a documentation target to draft.',
        ('document the inbox host', 'draft docs for the deploy runbook', 'write docs for the router', 'document this package'),
        ()),
    'publish_doc': DevStoryIntent(
        'Announce the drafted doc out-of-band.',
        (),
        ()),
    'revise_doc': DevStoryIntent(
        'Re-draft the doc with changes.',
        (),
        ()),
    'draft_ready': DevStoryIntent(
        '(internal) the draft bound — show the review read-out.',
        (),
        ()),
    'doc_published': DevStoryIntent(
        '(internal) the doc announcement landed — show the read-out.',
        (),
        ()),
    'confirm_init': DevStoryIntent(
        'Accept and apply the reviewed onboarding profile.',
        ('accept', 'confirm', 'looks good', 'approve onboarding profile'),
        ()),
    'revise_init': DevStoryIntent(
        'Record feedback for the next onboarding profile draft.',
        ('revise', 'change onboarding profile', 'update profile'),
        ()),
    'draft_profile': DevStoryIntent(
        'Ask an LLM to draft a project-profile/v1 candidate, then validate it before applying.',
        ('draft profile with llm', 'use llm profile', 'improve profile'),
        ()),
    'profile_drafted': DevStoryIntent(
        '(internal) LLM profile draft completed — validate it.',
        (),
        ()),
    'profile_validated': DevStoryIntent(
        '(internal) profile validation completed — return to review.',
        (),
        ()),
    'init_discovered': DevStoryIntent(
        '(internal) project discovery completed — show the profile review.',
        (),
        ()),
    'init_applied': DevStoryIntent(
        '(internal) onboarding apply completed — show the result.',
        (),
        ()),
    'go_docs': DevStoryIntent(
        'Open the docs room.',
        ('docs', 'update docs'),
        ()),
    'search_tickets': DevStoryIntent(
        'Search tickets across the configured provider.',
        ('search for auth bugs', 'find sprint tickets'),
        ()),
    'pick_ticket': DevStoryIntent(
        'Pick a ticket from the current results and start working on it.',
        ('pick TKT-001', 'select 1', 'pick 2', 'open this ticket'),
        ('pick {n}', 'select {n}', 'choose {n}', 'pick row {n}', 'select row {n}')),
    'continue': DevStoryIntent(
        'Advance to the next step. Each room defines its own continue: arc (typically: pick → bugfix, draft → review, etc.).',
        ('continue', 'proceed', 'next', 'ok', 'go ahead'),
        ()),
    'drive': DevStoryIntent(
        'Drive the picked ticket through its pipeline. Routes by ticket_type: bug → bf, feature → impl, epic → cyp.',
        ('drive', 'push', 'start', 'drive it', 'run the pipeline', 'take it through', 'drive the ticket'),
        ()),
    'go_bugfix': DevStoryIntent(
        'Start the bugfix path when the operator asks to fix, debug, investigate, or work on bugs. If no ticket is picked yet, the landing room will ask them to pick one first.',
        ('fix bug', 'bugfix', 'work on bug', 'fix bugs', 'i want to fix a bug', 'i want to work on some bugs'),
        ()),
    'bugfix_open_pr': DevStoryIntent(
        'Run the bugfix pipeline, then open and refine a pull request.',
        ('fix this and open a pr', 'bugfix to pr', 'open a pull request after fixing'),
        ()),
    'bugfix_leave_worktree': DevStoryIntent(
        'Run the bugfix pipeline and leave the completed local worktree for manual review.',
        ('fix this and leave a worktree', 'bugfix local worktree', 'leave the worktree after fixing'),
        ()),
    'bugfix_merge_local': DevStoryIntent(
        'Run the bugfix pipeline and merge the fix into the local base branch.',
        ('fix this and merge locally', 'merge to main after fixing', 'bugfix to local main'),
        ()),
    'go_pr_refinement': DevStoryIntent(
        'Hand off to the pr-refinement sub-story for an open PR.',
        ('pr refinement', 'monitor pr', 'pr'),
        ()),
    'go_implementation': DevStoryIntent(
        'Hand off to the implementation sub-story for the picked task.',
        ('implement task', 'implementation', 'work on task'),
        ()),
    'go_cypilot': DevStoryIntent(
        'Hand off to the cypilot sub-story (SDLC waterfall) for the picked epic.',
        ('cypilot', 'drive epic', 'waterfall'),
        ()),
    'go_code_review_story': DevStoryIntent(
        'Hand off to the code-review sub-story (teammate PR review).',
        ('review teammate pr', 'code review story', 'rev'),
        ()),
    'make_demo': DevStoryIntent(
        'Produce or refresh a tour-driven demo video for a feature, then gate it with the kitsoki-ui-qa vision review (autonomous maker→QA loop).',
        ('make a demo video', 'record a demo', 'demo video', 'refresh the demo video', 'tour video for this feature'),
        ()),
    'pick_review': DevStoryIntent(
        "Pick a 'PR awaiting your review' notification from the inbox and enter the code-review story.",
        ('pick PR-38', 'review notification', 'pick review'),
        ()),
    'ask_question': DevStoryIntent(
        'Ask the Agent a question.',
        ('how does X work', 'what is Y'),
        ()),
    'discuss': DevStoryIntent(
        'In intake: describe your proposal idea (one message advances to search). In refine: fold a message into the brief.',
        ('i want to build', 'the idea is', "it's for", 'tell me more', "here's what i'm thinking"),
        ()),
    'ready': DevStoryIntent(
        "Run the brief quality check — if the brief passes, advance to draft; otherwise show what's missing.",
        ('ready', 'check the brief', 'review it', 'is it good?', 'done discussing', "let's go"),
        ()),
    'advance_brief': DevStoryIntent(
        'Internal: fired by the brief check when the brief passes review, to advance to draft.',
        (),
        ()),
    'materialized': DevStoryIntent(
        'Internal: fired once the proposal workspace + references are prepared, to advance to brief authoring.',
        (),
        ()),
    'capture_existing': DevStoryIntent(
        'Point the proposal pipeline at existing docs to read.',
        ('see docs/foo.md', 'based on the auth spec', 'read these docs'),
        ()),
    'confirm': DevStoryIntent(
        'Confirm the current review step (brief, completeness, references) and move on.',
        ('confirm', 'proceed', 'looks right', 'the brief is good', 'continue to the next step'),
        ()),
    'recheck': DevStoryIntent(
        'Re-run the sanity check against the brief you just edited on disk.',
        ('recheck', 'check again', 're-run the check', 'i edited it'),
        ()),
    'clarify': DevStoryIntent(
        'Step back to revise the brief before continuing.',
        ('clarify', 'more detail', 'let me revise', 'back to the brief'),
        ()),
    'regenerate': DevStoryIntent(
        "Re-generate the current step's machine output, optionally with feedback.",
        ('regenerate', 'search again', 'redo the references', 'rewrite the brief'),
        ()),
    'refine': DevStoryIntent(
        'Refine the current artifact with feedback, building on it (NOT a fresh start).',
        ('refine', 'rework', 'revise', 'add a reference', 'drop that doc', 're-scope that section'),
        ()),
    'accept': DevStoryIntent(
        'Publish the proposal draft and file a feature ticket.',
        ('accept', 'approve', 'looks good', 'lgtm', 'publish it'),
        ()),
    'accept_no_ticket': DevStoryIntent(
        'Publish the proposal draft without filing an implementation ticket.',
        ('publish only', 'save without ticket', "don't file a ticket", 'no ticket'),
        ()),
    'proceed_new': DevStoryIntent(
        'No meaningful overlap — create a brand-new proposal.',
        ('proceed', 'create new', "it's new", 'no overlap'),
        ()),
    'change_existing': DevStoryIntent(
        'Amend an existing overlapping proposal instead of creating a new one.',
        ('amend the existing one', 'change that proposal', 'fold into', 'extend'),
        ()),
    'override_new': DevStoryIntent(
        'Create a new proposal despite the detected overlap (recorded for audit).',
        ('new anyway', 'ignore the overlap', 'still create new'),
        ()),
    'go_prd': DevStoryIntent(
        'Start the PRD discovery pipeline, then carry it into design.',
        ('prd', 'write a prd', 'start a prd', 'author a prd', 'product requirements'),
        ()),
    'apply': DevStoryIntent(
        'Apply the proposed ideas-backlog section moves — rewrite the file.',
        ('apply', 'apply the moves', 'update the backlog', 'make the changes'),
        ()),
    'pick': DevStoryIntent(
        'Start a proposal from one of the suggested ideas candidates.',
        ('pick 1', 'pick candidate 2', 'start on 1', 'propose 2'),
        ()),
    'summarize_day': DevStoryIntent(
        "Summarise today's work for standup.",
        ('summarize', 'summarise day', 'what did I do'),
        ()),
    'cleanup_workspaces': DevStoryIntent(
        'Scan for merged worktrees and branches that are safe to delete.',
        ('cleanup worktrees', 'clean up workspaces', 'delete merged branches', 'prune dead worktrees'),
        ('scan cleanup using {base} as the base branch', 'scan_cleanup {base}')),
    'cleanup_workspaces_main': DevStoryIntent(
        'Scan for merged worktrees and branches that are safe to delete using main as the base branch.',
        ('scan cleanup', 'scan_cleanup', 'scan cleanup using main as the base branch', 'scan_cleanup main', 'clean up merged worktrees'),
        ('clean up merged worktrees',)),
    'proceed': DevStoryIntent(
        'Advance the current room (used by workspace_manager and other one-shot rooms).',
        ('proceed', 'next'),
        ()),
    'quit': DevStoryIntent(
        'Quit the running pipeline / room.',
        ('quit', 'abort'),
        ()),
    'look': DevStoryIntent(
        'Re-render the current view.',
        ('look', 'what now?'),
        ()),
    'work': DevStoryIntent(
        'Describe implementation/debugging/investigation work for the free-form workbench agent to pick up — explore code, draft a code change, investigate a failure. Read-only until you approve a change. Do not use for proposal authoring, proposal review, design-workflow, or proposal-decision turns; those go to New Idea.',
        ('fix the login crash', 'investigate why the build is slow', 'look at how imports resolve and sketch a change', 'refactor the loader', 'add a test for the off-ramp'),
        ()),
    'take_route': DevStoryIntent(
        'Jump onto the named pipeline the workbench agent suggested for this request.',
        (),
        ()),
    'accept_plan': DevStoryIntent(
        'Accept the proposed plan as-is and apply it (run the step, then verify).',
        (),
        ()),
    'apply_plan': DevStoryIntent(
        'Alias of accept_plan — apply the proposed plan as-is.',
        (),
        ()),
    'verify_done': DevStoryIntent(
        '(internal) verify passed — show the completion read-out.',
        (),
        ()),
    'apply_failed': DevStoryIntent(
        '(internal) verify failed — return to the workbench to refine.',
        (),
        ()),
    'run_verify': DevStoryIntent(
        '(internal) the step landed — run the verify gate.',
        (),
        ()),
    'bugfix_done_open_pr': DevStoryIntent(
        '(internal) completed bugfix should open a PR.',
        (),
        ()),
    'bugfix_done_leave_worktree': DevStoryIntent(
        '(internal) completed bugfix should preserve the local worktree.',
        (),
        ()),
})
