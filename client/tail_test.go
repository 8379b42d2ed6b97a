package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// TestOutputTail: the last lines of what the sub-agent printed, agora's
// marked lines left out, through the API's logs endpoint (apitest's
// service), written in small chunks.
func TestOutputTail(t *testing.T) {
	t.Parallel()
	var many strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
		fmt.Fprintf(&many, "%c{\"kind\":\"dispatch.progress\",\"n\":%d}\n", schemas.OutputMark, i)
	}
	mark := string(schemas.OutputMark)
	outputs := map[string]string{
		"few":   "compiling\n" + mark + "time=… level=INFO msg=\"dispatch ended\"\ndone, no newline",
		"many":  many.String(),
		"none":  mark + "only agora's\n",
		"empty": "",
	}
	svc := &apitest.Service{LogsFunc: func(ctx context.Context, id string, round int, follow bool, w io.Writer) error {
		out, ok := outputs[id]
		if !ok {
			return fmt.Errorf("task %s: %w", id, wire.ErrNotFound)
		}
		for i := 0; i < len(out); i += 7 {
			if _, err := io.WriteString(w, out[i:min(i+7, len(out))]); err != nil {
				return err
			}
		}
		return nil
	}}
	c := newClient(t, svc, "s3cret")
	var last5 []string
	for i := 26; i <= 30; i++ {
		last5 = append(last5, fmt.Sprintf("line %d", i))
	}
	for _, tc := range []struct {
		id      string
		want    []string
		wantCut bool
	}{
		{"few", []string{"compiling", "done, no newline"}, false},
		{"many", last5, true},
		{"none", nil, false},
		{"empty", nil, false},
	} {
		lines, cut, err := c.OutputTail(t.Context(), tc.id, 1, 5)
		if err != nil || !slices.Equal(lines, tc.want) || cut != tc.wantCut {
			t.Errorf("OutputTail(%s) = %q, cut %v, %v; want %q, cut %v", tc.id, lines, cut, err, tc.want, tc.wantCut)
		}
	}
	if _, _, err := c.OutputTail(t.Context(), "gone", 1, 5); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("OutputTail(gone) = %v, want ErrNotFound", err)
	}
}
