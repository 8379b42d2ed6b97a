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
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
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

// writeCounter is a ResponseWriter that keeps each write of the body
// apart, so a test sees which changes went out together.
type writeCounter struct {
	mu     sync.Mutex
	header http.Header
	writes []string
}

func (w *writeCounter) Header() http.Header { return w.header }
func (w *writeCounter) WriteHeader(int)     {}
func (w *writeCounter) Flush()              {}
func (w *writeCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// since is the writes after the first n, and how many there are now.
func (w *writeCounter) since(n int) ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes[n:]), len(w.writes)
}

// A stream that has just written waits out its pace, and the changes that
// come meanwhile go out together in one write; one that was quiet writes
// at once. (synctest: the clock moves only when every goroutine waits.)
func TestEvents_PacedWrites(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const pace = time.Second
		send := make(chan func(wire.Change), 1)
		svc := &apitest.Service{WatchFunc: func(ctx context.Context, fn func(wire.Change)) error {
			send <- fn
			<-ctx.Done()
			return nil
		}}
		h, err := api.NewHandler(api.Config{Service: svc, Logger: testLogger(t), StreamPace: pace})
		if err != nil {
			t.Fatalf("NewHandler: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		req := httptest.NewRequestWithContext(ctx, "GET", "/v1/events", nil)
		req.RemoteAddr, req.Host = "127.0.0.1:40000", "127.0.0.1:7070"
		w := &writeCounter{header: http.Header{}}
		served := make(chan struct{})
		go func() { h.ServeHTTP(w, req); close(served) }()
		fn := <-send
		synctest.Wait()
		_, n := w.since(0) // ": stream open"

		fn(change("t-1", wire.StateQueued))
		synctest.Wait()
		if got, now := w.since(n); len(got) != 1 || !strings.Contains(got[0], `"t-1"`) {
			t.Fatalf("after the first change of a quiet stream: writes %q, want one with t-1", got)
		} else {
			n = now
		}
		for _, id := range []string{"t-2", "t-3", "t-4"} {
			fn(change(id, wire.StateQueued))
			synctest.Wait()
		}
		if got, _ := w.since(n); len(got) != 0 {
			t.Fatalf("changes within the pace of the last write: written at once %q, want them held", got)
		}
		time.Sleep(pace)
		synctest.Wait()
		got, _ := w.since(n)
		if len(got) != 1 || strings.Count(got[0], "event: task\n") != 3 {
			t.Fatalf("after the pace: writes %q, want the three held changes in one", got)
		}
		if a, b, c := strings.Index(got[0], `"t-2"`), strings.Index(got[0], `"t-3"`), strings.Index(got[0], `"t-4"`); a > b || b > c {
			t.Errorf("the held changes out of order: %q", got[0])
		}
		cancel()
		<-served
	})
}

// An event stream over HTTP/1.1 goes without chunked transfer coding, one
// write per flush instead of two; the body ends with the connection.
func TestEvents_NotChunked(t *testing.T) {
	t.Parallel()
	sent := []wire.Change{change("t-1", wire.StateRunning)}
	ended := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	resp, r := openStream(t, ctx, api.Config{Service: watchFake(sent, ended)}, "/v1/events")
	if len(resp.TransferEncoding) != 0 || resp.ContentLength != -1 || !resp.Close {
		t.Errorf("GET /v1/events: transfer encoding %q, content length %d, close %v; want none, unknown (-1), true",
			resp.TransferEncoding, resp.ContentLength, resp.Close)
	}
	want, _ := json.Marshal(sent[0])
	if event, data := readEvent(t, r); event != "task" || data != string(want) {
		t.Errorf("event = %q %s, want task %s", event, data, want)
	}
	cancel()
	waitClosed(t, ended, "Watch context ends")
}
