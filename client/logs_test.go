package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/wire"
)

// chunkWriter hands each write to a channel.
type chunkWriter chan string

func (w chunkWriter) Write(p []byte) (int, error) { w <- string(p); return len(p), nil }

func TestClient_Logs(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string
	next := make(chan struct{})
	svc := &apitest.Service{LogsFunc: func(ctx context.Context, id string, round int, follow bool, w io.Writer) error {
		mu.Lock()
		calls = append(calls, fmt.Sprintf("%s %d %v", id, round, follow))
		mu.Unlock()
		switch id {
		case "gone":
			return fmt.Errorf("task gone: %w", wire.ErrNotFound)
		case "broken":
			_, _ = io.WriteString(w, "half")
			return fmt.Errorf("task broken was removed while its output was followed: %w", wire.ErrNotFound)
		case "live":
			_, _ = io.WriteString(w, "first\n")
			<-next // the client must have the first chunk before the second is written
			_, err := io.WriteString(w, "second\n")
			return err
		}
		_, err := io.WriteString(w, "stored output\n")
		return err
	}}
	c := newClient(t, svc, "s3cret")
	ctx := t.Context()

	var out bytes.Buffer
	if err := c.Logs(ctx, "t-1", 2, false, &out); err != nil || out.String() != "stored output\n" {
		t.Errorf("Logs(t-1, round 2) = %v, %q; want the stored output", err, out.String())
	}
	if err := c.Logs(ctx, "gone", 0, false, &out); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Logs(gone) = %v, want ErrNotFound", err)
	}
	out.Reset()
	err := c.Logs(ctx, "broken", 0, true, &out)
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 0 || !errors.Is(err, wire.ErrNotFound) || out.String() != "half" {
		t.Errorf("Logs(broken) = %v (%T), %q; want the trailer's not_found error after the output %q", err, err, out.String(), "half")
	}

	chunks := make(chunkWriter, 2)
	done := make(chan error, 1)
	go func() { done <- c.Logs(ctx, "live", 0, true, chunks) }()
	select {
	case got := <-chunks:
		if got != "first\n" {
			t.Errorf("first chunk = %q, want %q", got, "first\n")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first chunk did not arrive while the stream was open")
	}
	close(next)
	if err := <-done; err != nil {
		t.Errorf("Logs(live, follow) = %v", err)
	}
	if got := <-chunks; got != "second\n" {
		t.Errorf("second chunk = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "t-1 2 false|gone 0 false|broken 0 true|live 0 true"
	if got := strings.Join(calls, "|"); got != want {
		t.Errorf("service calls = %s, want %s", got, want)
	}
	if err := c.Logs(ctx, "", 0, false, &out); !errors.Is(err, wire.ErrInvalidRequest) {
		t.Errorf("Logs with no task id = %v, want ErrInvalidRequest", err)
	}
}
