package ecsfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"
)

// logStream is one awslogs stream: a container's stdout and stderr, one
// event per line, in the order written.
type logStream struct {
	mu     sync.Mutex
	events []logEvent
}

type logEvent struct {
	Timestamp     int64  `json:"timestamp"`
	Message       string `json:"message"`
	IngestionTime int64  `json:"ingestionTime"`
}

// createStream creates the task's stream as the awslogs driver would, or
// returns a stream nobody can read when the definition logs elsewhere.
func (s *Server) createStream(t *task) *logStream {
	ls := &logStream{}
	lc := t.container().LogConfiguration
	if lc == nil || lc.LogDriver != types.LogDriverAwslogs {
		return ls
	}
	group, prefix := lc.Options["awslogs-group"], lc.Options["awslogs-stream-prefix"]
	name := prefix + "/" + t.containerName() + "/" + t.id
	s.mu.Lock()
	s.streams[group+"\x00"+name] = ls
	s.mu.Unlock()
	t.set(func() { t.logsStream = name })
	return ls
}

// writer returns a writer that turns lines into events. It is used from one
// goroutine (the engine's Logs writes stdout and stderr frames in order).
func (ls *logStream) writer() *lineWriter { return &lineWriter{ls: ls} }

type lineWriter struct {
	ls  *logStream
	buf bytes.Buffer
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line) // an incomplete line waits for its end
			return len(p), nil
		}
		w.ls.add(strings.TrimSuffix(line, "\n"))
	}
}

func (w *lineWriter) flush() {
	if w.buf.Len() > 0 {
		w.ls.add(w.buf.String())
		w.buf.Reset()
	}
}

func (ls *logStream) add(msg string) {
	now := time.Now().UnixMilli()
	ls.mu.Lock()
	ls.events = append(ls.events, logEvent{Timestamp: now, Message: msg, IngestionTime: now})
	ls.mu.Unlock()
}

func (s *Server) logs(op string, body []byte) (any, *apiError) {
	if op != "GetLogEvents" {
		return nil, &apiError{400, "UnknownOperationException", "the fake does not implement " + op}
	}
	var in struct {
		LogGroupName  string
		LogStreamName string
		NextToken     *string
		StartFromHead *bool
		Limit         *int32
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &apiError{400, "SerializationException", err.Error()}
	}
	s.mu.Lock()
	ls := s.streams[in.LogGroupName+"\x00"+in.LogStreamName]
	s.mu.Unlock()
	if ls == nil {
		return nil, &apiError{400, "ResourceNotFoundException", "The specified log stream does not exist."}
	}
	if !aws.ToBool(in.StartFromHead) && in.NextToken == nil {
		return nil, invalidParam("the fake reads from the head only")
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	start := 0
	if in.NextToken != nil {
		n, err := strconv.Atoi(strings.TrimPrefix(aws.ToString(in.NextToken), "f/"))
		if err != nil || n < 0 || n > len(ls.events) {
			return nil, invalidParam("The specified nextToken is invalid.")
		}
		start = n
	}
	limit := int(aws.ToInt32(in.Limit))
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	end := min(start+limit, len(ls.events))
	return map[string]any{
		"events":            append([]logEvent{}, ls.events[start:end]...),
		"nextForwardToken":  fmt.Sprintf("f/%d", end),
		"nextBackwardToken": fmt.Sprintf("b/%d", start),
	}, nil
}
