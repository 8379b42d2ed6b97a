package view

import (
	"encoding/json"
	"io"
)

// LogsJSON is what logs --json prints.
type LogsJSON struct {
	TaskID     string `json:"task_id"`
	Round      int    `json:"round"`
	DispatchID string `json:"dispatch_id"`
	Output     string `json:"output"`
}

// Chunks is logs -f --json's output on w: each chunk of output as one
// LogsJSON line of l's task, round and dispatch.
func (l LogsJSON) Chunks(w io.Writer) io.Writer { return jsonChunks{w: w, head: l} }

// jsonChunks writes each chunk as one LogsJSON line.
type jsonChunks struct {
	w    io.Writer
	head LogsJSON
}

func (j jsonChunks) Write(p []byte) (int, error) {
	line := j.head
	line.Output = string(p)
	data, err := json.Marshal(line)
	if err != nil {
		return 0, err
	}
	if _, err := j.w.Write(append(data, '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}
