"""Method, notification and command names of the sidecar protocol (no imports: the server
registers its handlers with these before the domain is loaded)."""

# -- methods ----------------------------------------------------------------------------------------

MINE_STATUS = "kitsoki/mineStatus"
MINE_CONTROL = "kitsoki/mineControl"
PROPOSALS = "kitsoki/proposals"
PROPOSAL = "kitsoki/proposal"
PROPOSAL_CONTENT = "kitsoki/proposalContent"
ANSWER_QUESTION = "kitsoki/answerQuestion"
EVOLVE = "kitsoki/evolve"
RUNS = "kitsoki/runs"
PASS_RAN = "kitsoki/passRan"
PROPOSALS_CHANGED = "kitsoki/proposalsChanged"
PROPOSAL_DECIDED = "kitsoki/proposalDecided"
QUESTION = "kitsoki/question"
QUESTION_WITHDRAWN = "kitsoki/questionWithdrawn"
DECIDED = "kitsoki/decided"
"""Accepted and rejected proposals, and whether each can be undone or restored."""
TAKEN_BACK = "kitsoki/proposalTakenBack"
"""A verdict taken back (an undo, a restore, or a saved file that dropped a kept accept)."""

# workspace/executeCommand
CMD_ACCEPT = "kitsoki.accept"
CMD_REFINE = "kitsoki.refine"
CMD_REJECT = "kitsoki.reject"
CMD_DIFF = "kitsoki.diff"
CMD_MINE_NOW = "kitsoki.mineNow"
CMD_PAUSE = "kitsoki.pause"
CMD_RESUME = "kitsoki.resume"
CMD_PROPOSE = "kitsoki.propose"
CMD_SHOW = "kitsoki.showProposals"
CMD_CHOOSE = "kitsoki.choose"
"""The one lens of a proposal that shares its line with others: asks what to do with it."""
CMD_RESOLVE = "kitsoki.resolve"
"""An accept left unsettled: `[{}]` lists them, `[{"id", "choice": "restore" | "keep"}]` settles one."""
CMD_UNDO = "kitsoki.undo"
"""Undo a kept accept: the bytes it replaced are put back (through the apply journal)."""
CMD_RESTORE = "kitsoki.restore"
"""Take a rejection back: the proposal is offered again."""
COMMANDS = (CMD_ACCEPT, CMD_REFINE, CMD_REJECT, CMD_DIFF, CMD_MINE_NOW, CMD_PAUSE, CMD_RESUME, CMD_PROPOSE, CMD_SHOW,
            CMD_CHOOSE, CMD_UNDO, CMD_RESTORE, CMD_RESOLVE)

QUESTION_HEADER = "Capture as structure?"
"""kitsoki's TUI card header for a mining proposal (internal/tui/mine_command.go)."""
ANSWERS = ("accept", "refine", "dismiss")
