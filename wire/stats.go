package wire

import "time"

// StatsOptions choose the tasks GET /v1/stats counts: every task the
// caller may see, narrowed by each field that is set.
type StatsOptions struct {
	// Subagent keeps the tasks of one sub-agent (its name, exactly).
	Subagent string `json:"subagent,omitempty"`
	// Label keeps the tasks with this label, key=value; a batch is
	// "agora.batch=ID" (BatchLabel).
	Label string `json:"label,omitempty"`
	// Since keeps the tasks created at or after it.
	Since time.Time `json:"since,omitzero"`
	// Limit bounds the sub-agents listed, most tasks first: 0 means
	// DefaultPageLimit, at most MaxPageLimit. Total counts every one.
	Limit int `json:"limit,omitempty"`
}

// Stats is the body of GET /v1/stats: question quality and round
// economics of the tasks StatsOptions chose, in all and per sub-agent
// (docs/stats.md says how each number is computed).
type Stats struct {
	// Total counts every chosen task, whatever its sub-agent.
	Total SubagentStats `json:"total"`
	// Subagents are the chosen tasks by sub-agent name, most tasks first
	// (then by name), at most Limit of them.
	Subagents []SubagentStats `json:"subagents"`
	// OmittedSubagents is how many more sub-agents Limit left out.
	OmittedSubagents int `json:"omitted_subagents,omitempty"`
}

// SubagentStats is what the tasks of one sub-agent (or all, in
// Stats.Total) cost in questions, people's time, rounds and tokens.
type SubagentStats struct {
	// Subagent is the sub-agent's name; empty in Stats.Total.
	Subagent string `json:"subagent,omitempty"`
	// Tasks counts the tasks; EndedTasks those finished, failed,
	// cancelled or expired.
	Tasks      int `json:"tasks"`
	EndedTasks int `json:"ended_tasks"`

	// Questions counts the questions the tasks' rounds asked;
	// QuestionsPerTask is Questions / Tasks.
	Questions        int     `json:"questions"`
	QuestionsPerTask float64 `json:"questions_per_task"`
	// WithOptions and WithDefault count the questions that gave options
	// and a default; the shares are of Questions (0 with no question).
	WithOptions      int     `json:"with_options"`
	WithOptionsShare float64 `json:"with_options_share"`
	WithDefault      int     `json:"with_default"`
	WithDefaultShare float64 `json:"with_default_share"`
	// Answered counts the questions that have an accepted answer (a
	// default assumed included); AnsweredWithDefault those of them that
	// gave a default.
	Answered            int `json:"answered"`
	AnsweredWithDefault int `json:"answered_with_default"`
	// DefaultTaken counts the answers that are the question's default,
	// whoever gave them; DefaultAssumed those where nobody answered and
	// the route's end took it. DefaultTakenShare is DefaultTaken /
	// AnsweredWithDefault (0 when none).
	DefaultTaken      int     `json:"default_taken"`
	DefaultTakenShare float64 `json:"default_taken_share"`
	DefaultAssumed    int     `json:"default_assumed"`
	// AnswerWait is the time from each answered question to its answer.
	AnswerWait Durations `json:"answer_wait"`

	// Rounds counts the rounds of the tasks (a round dispatched again by
	// retry or respawn counts once); Dispatches counts every dispatch,
	// each a container start. RoundsPerTask is over the ended tasks.
	Rounds        int          `json:"rounds"`
	Dispatches    int          `json:"dispatches"`
	RoundsPerTask Distribution `json:"rounds_per_task"`
	// ColdStart is the time from each dispatch being put on the queue to
	// its worker's dispatch.started: any wait for a runner slot, the
	// container's create and start, and the worker's own start.
	ColdStart Durations `json:"cold_start"`

	// Usage sums what the runtime reported (Claude Code does, exec does
	// not); nil when no chosen task reported any.
	Usage *UsageStats `json:"usage,omitempty"`
}

// Durations summarises a set of durations in milliseconds; all zero when
// Count is 0. Median and P90 are the nearest-rank percentiles; TotalMS is
// their sum (for AnswerWait: the time the questions kept tasks waiting).
type Durations struct {
	Count    int   `json:"count"`
	MedianMS int64 `json:"median_ms"`
	P90MS    int64 `json:"p90_ms"`
	MaxMS    int64 `json:"max_ms"`
	TotalMS  int64 `json:"total_ms"`
}

// Distribution summarises a set of counts; all zero when Count is 0.
// Median and P90 are the nearest-rank percentiles.
type Distribution struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Median int     `json:"median"`
	P90    int     `json:"p90"`
	Max    int     `json:"max"`
}

// UsageStats sums the usage the runtime reported over the tasks that
// reported any (Tasks of them), and divides it by them.
type UsageStats struct {
	Tasks                    int     `json:"tasks"`
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	CostUSD                  float64 `json:"cost_usd"`
	// TokensPerTask is the four token counts summed, per task;
	// CostPerTaskUSD is CostUSD per task.
	TokensPerTask  float64 `json:"tokens_per_task"`
	CostPerTaskUSD float64 `json:"cost_per_task_usd"`
}
