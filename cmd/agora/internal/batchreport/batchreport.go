// Package batchreport is the bookkeeping of agora batch submit: the batch
// id (its rule and its default from the file's name), the count of what
// became of a file's lines, and the failed lines grouped by cause and worded
// once per group. It computes; cmd/agora parses, calls and prints.
package batchreport

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

// idPattern is a batch id: a task id with room for "-<line>".
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$`)

// ValidID reports whether id can name a batch: letters, digits, '-' and
// '_', at most 80, starting with a letter or digit.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// IDFromFile is the default batch id: the file's base name without its
// extension, other characters than letters, digits, - and _ as -.
func IDFromFile(file string) string {
	base := filepath.Base(file)
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	id := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, base)
	return strings.TrimLeft(id, "-_")
}

// Report is batch submit's --json output.
type Report struct {
	Batch     string             `json:"batch"`
	File      string             `json:"file"`
	Lines     int                `json:"lines"`
	Submitted int                `json:"submitted"`
	Existing  int                `json:"existing"`
	Failed    int                `json:"failed"`
	Results   []client.BatchLine `json:"results"`
}

// Counts is how many of the lines were submitted, were there already and
// failed; lines not sent yet are in none.
func Counts(lines []client.BatchLine) (submitted, existing, failed int) {
	for _, l := range lines {
		switch l.Result {
		case client.BatchSubmitted:
			submitted++
		case client.BatchExisting:
			existing++
		case client.BatchFailed:
			failed++
		}
	}
	return submitted, existing, failed
}

// Count sets the report's counts from its results.
func (r *Report) Count() {
	r.Submitted, r.Existing, r.Failed = Counts(r.Results)
}

// FailedLines is "lines 3, 5, …" of the failed lines (see LineList).
func (r *Report) FailedLines() string {
	var lines []int
	for _, l := range r.Results {
		if l.Result == client.BatchFailed {
			lines = append(lines, l.Line)
		}
	}
	return LineList(lines)
}

// FailureGroup is the lines that failed with one same error.
type FailureGroup struct {
	Err   string
	Lines []int
}

// GroupFailures groups the failed lines by their error, in the order of
// each error's first line: 400 lines with the same typo are one group, and
// so are 40 lines whose task ids are taken by requests that differ in the
// same fields (conflictText words them).
func (r *Report) GroupFailures() []FailureGroup {
	var groups []FailureGroup
	index := map[string]int{}
	members := map[int][]client.BatchLine{}
	for _, l := range r.Results {
		if l.Result != client.BatchFailed {
			continue
		}
		key := "error:" + l.Error
		if l.Conflict != nil {
			key = "conflict:" + conflictFields(l.Conflict)
		}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, FailureGroup{Err: l.Error})
		}
		groups[i].Lines = append(groups[i].Lines, l.Line)
		members[i] = append(members[i], l)
	}
	for i := range groups {
		if first := members[i][0]; first.Conflict != nil {
			groups[i].Err = conflictText(members[i], r.Batch)
		}
	}
	return groups
}

// conflictFields names the fields a conflict is about, in its order.
func conflictFields(c *client.Conflict) string {
	names := make([]string, 0, len(c.Differences))
	for _, d := range c.Differences {
		names = append(names, d.Field)
	}
	return strings.Join(names, ",") + fmt.Sprintf("+%d", c.More)
}

// conflictText words the conflict of lines whose requests differ from
// the stored ones in the same fields: a field whose two values are the
// same on every line is shown with them (route differs: stored "human",
// now "memory,human"), one that varies from line to line by its name, and
// what to do.
func conflictText(lines []client.BatchLine, batch string) string {
	first := lines[0].Conflict
	var parts []string
	for i, d := range first.Differences {
		same := true
		for _, l := range lines[1:] {
			if o := l.Conflict.Differences[i]; o.Stored != d.Stored || o.Now != d.Now {
				same = false
				break
			}
		}
		if same {
			parts = append(parts, wire.DescribeDifference(d))
		} else {
			parts = append(parts, d.Field+" differs (line by line)")
		}
	}
	if first.More > 0 {
		parts = append(parts, fmt.Sprintf("and %d more field%s", first.More, plural(first.More)))
	}
	what := "task id already used for a different request"
	if len(parts) > 0 {
		what += " (" + strings.Join(parts, "; ") + ")"
	}
	n := len(lines)
	if n == 1 {
		id := lines[0].TaskID
		return fmt.Sprintf("task %s: %s; give the line another task_id, or remove the task first (agora rm %s)", id, what, id)
	}
	return fmt.Sprintf("%d task%s: %s; submit them under a new batch id (--batch %s-2), or remove the batch's tasks first (agora rm --batch %s --yes)",
		n, plural(n), what, batch, batch)
}

// maxListedLines is how many line numbers a list shows before "…".
const maxListedLines = 8

// LineList is "line 3", "lines 3, 5, 9" or, past eight numbers,
// "lines 3, 5, 9, … (400 lines)".
func LineList(lines []int) string {
	nums := make([]string, 0, min(len(lines), maxListedLines))
	for _, n := range lines[:min(len(lines), maxListedLines)] {
		nums = append(nums, strconv.Itoa(n))
	}
	text := "line" + plural(len(lines)) + " " + strings.Join(nums, ", ")
	if len(lines) > maxListedLines {
		text += fmt.Sprintf(" … (%d lines)", len(lines))
	}
	return text
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
