package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/api/apitest"
	"github.com/agoradev/agora/wire"
)

// watchFake is a service whose Watch sends changes and reports when its
// context ends.
func watchFake(changes []wire.Change, ended chan<- struct{}) *apitest.Service {
	return &apitest.Service{WatchFunc: func(ctx context.Context, fn func(wire.Change)) error {
		for _, c := range changes {
			fn(c)
		}
		<-ctx.Done()
		close(ended)
		return nil
	}}
}

// openStream starts an httptest server with the API and opens its event
// stream at target; the stream ends when ctx does.
func openStream(t *testing.T, ctx context.Context, cfg api.Config, target string) (*http.Response, *bufio.Reader) {
	t.Helper()
	cfg.Logger = testLogger(t)
	h, err := api.NewHandler(cfg)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	srv := httptest.NewServer(checked(t, h))
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d, want 200", target, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	return resp, bufio.NewReader(resp.Body)
}

// readEvent reads one event (comments skipped) and returns its name and
// data.
func readEvent(t *testing.T, r *bufio.Reader) (event, data string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read event stream: %v (event %q, data %q so far)", err, event, data)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && data != "":
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// waitClosed fails unless ch closes before the deadline.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10s", what)
	}
}

func change(id string, state wire.State) wire.Change {
	return wire.Change{TaskID: id, Task: task(id, state)}
}

func TestEvents_StreamsChanges(t *testing.T) {
	t.Parallel()
	sent := []wire.Change{change("t-1", wire.StateRunning), {TaskID: "t-2", Removed: true}}
	ended := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, r := openStream(t, ctx, api.Config{Service: watchFake(sent, ended)}, "/v1/events")
	for _, c := range sent {
		want, _ := json.Marshal(c)
		if event, data := readEvent(t, r); event != "task" || data != string(want) {
			t.Errorf("event = %q %s, want task %s", event, data, want)
		}
	}
	cancel() // the client goes away
	waitClosed(t, ended, "the service's Watch context ends after the client disconnects")
}

// A burst of changes — more than one batch a stream writes before it
// flushes — arrives whole and in order.
func TestEvents_BurstInOrder(t *testing.T) {
	t.Parallel()
	var sent []wire.Change
	for i := range 300 {
		sent = append(sent, change(fmt.Sprintf("t-%d", i), wire.StateRunning))
	}
	ended := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, r := openStream(t, ctx, api.Config{Service: watchFake(sent, ended)}, "/v1/events")
	for _, c := range sent {
		want, _ := json.Marshal(c)
		if event, data := readEvent(t, r); event != "task" || data != string(want) {
			t.Fatalf("event = %q %s, want task %s", event, data, want)
		}
	}
	cancel()
	waitClosed(t, ended, "Watch context ends")
}

func TestEvents_FilterByTask(t *testing.T) {
	t.Parallel()
	sent := []wire.Change{change("t-1", wire.StateRunning), change("t-2", wire.StateRunning),
		change("t-1", wire.StateFinished), change("t-2", wire.StateNeedsInput)}
	ended := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, r := openStream(t, ctx, api.Config{Service: watchFake(sent, ended)}, "/v1/events?task=t-2")
	for _, want := range []wire.State{wire.StateRunning, wire.StateNeedsInput} {
		_, data := readEvent(t, r)
		var got wire.Change
		if err := json.Unmarshal([]byte(data), &got); err != nil {
			t.Fatalf("decode %s: %v", data, err)
		}
		if got.TaskID != "t-2" || got.Task.State != want {
			t.Errorf("change = %s, want t-2 %s", data, want)
		}
	}
	cancel()
	waitClosed(t, ended, "Watch context ends")
}

func TestEvents_Heartbeat(t *testing.T) {
	t.Parallel()
	ended := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, r := openStream(t, ctx, api.Config{Service: watchFake(nil, ended), Heartbeat: time.Millisecond}, "/v1/events")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read event stream: %v", err)
		}
		if line == ": heartbeat\n" {
			break
		}
	}
	cancel()
	waitClosed(t, ended, "Watch context ends")
}

func TestEvents_WatchFails(t *testing.T) {
	t.Parallel()
	svc := &apitest.Service{WatchFunc: func(context.Context, func(wire.Change)) error {
		return errors.New("watch bucket agora_tasks: nats: connection closed")
	}}
	_, r := openStream(t, t.Context(), api.Config{Service: svc}, "/v1/events")
	event, data := readEvent(t, r)
	if want := `{"error":"watch bucket agora_tasks: nats: connection closed","code":"internal"}`; event != "error" || data != want {
		t.Errorf("event = %q %s, want error %s", event, data, want)
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after the error event: %q, %v; want the stream to end", rest, err)
	}
}

// Changes the service sent before its Watch returned still reach the
// client.
func TestEvents_WatchEndsAfterChanges(t *testing.T) {
	t.Parallel()
	svc := &apitest.Service{WatchFunc: func(_ context.Context, fn func(wire.Change)) error {
		fn(change("t-1", wire.StateFinished))
		return nil
	}}
	_, r := openStream(t, t.Context(), api.Config{Service: svc}, "/v1/events")
	if event, data := readEvent(t, r); event != "task" || !strings.Contains(data, `"state":"finished"`) {
		t.Errorf("event = %q %s, want the finished change", event, data)
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after the last change: %q, %v; want the stream to end", rest, err)
	}
}
