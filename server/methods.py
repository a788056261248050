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
CMD_RESOLVE = "kitsoki.resolve"
"""An accept left unsettled: `[{}]` lists them, `[{"id", "choice": "restore" | "keep"}]` settles one."""
"""The one lens of a proposal that shares its line with others: asks what to do with it."""
COMMANDS = (CMD_ACCEPT, CMD_REFINE, CMD_REJECT, CMD_DIFF, CMD_MINE_NOW, CMD_PAUSE, CMD_RESUME, CMD_PROPOSE, CMD_SHOW,
            CMD_CHOOSE, CMD_RESOLVE)

QUESTION_HEADER = "Capture as structure?"
"""kitsoki's TUI card header for a mining proposal (internal/tui/mine_command.go)."""
ANSWERS = ("accept", "refine", "dismiss")
