package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agoradev/agora/wire"
)

// Result prints a result for a shell: a JSON string as its text
// (with a newline unless it ends with one), anything else as compact JSON
// on one line. Nothing for no result (JSON null or none).
func Result(w io.Writer, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var text string
	if raw[0] == '"' && json.Unmarshal(raw, &text) == nil {
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		_, err := io.WriteString(w, text)
		return err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return fmt.Errorf("the result is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// Artifacts lists a task's artifacts on w, one per line with its size and
// sha256; that it has none, on stderr.
func Artifacts(w, stderr io.Writer, task string, list []wire.Artifact) {
	if len(list) == 0 {
		fmt.Fprintf(stderr, "agora artifacts: task %s has no artifacts\n", task)
		return
	}
	width := 0
	for _, f := range list {
		width = max(width, len(f.Name))
	}
	for _, f := range list {
		fmt.Fprintf(w, "%-*s  %10s  sha256:%s\n", width, f.Name, strconv.FormatInt(f.Size, 10), f.SHA256)
	}
}

// JSON writes v as indented JSON, as every --json does.
func JSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
