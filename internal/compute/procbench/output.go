package procbench

import (
	"context"
	"io"
	"sync"
)

// output keeps a process's stdout and stderr in order, in memory and capped,
// for any number of readers, following ones included: what `docker logs`
// gives a container.
type output struct {
	mu     sync.Mutex
	chunks []chunk
	size   int
	closed bool
	// more is closed and replaced whenever something is written or the
	// output ends, waking followers.
	more chan struct{}
}

type chunk struct {
	stream int // 1 stdout, 2 stderr
	data   []byte
}

func newOutput() *output { return &output{more: make(chan struct{})} }

type streamWriter struct {
	o      *output
	stream int
}

func (w streamWriter) Write(b []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	// Past the cap the output is dropped, not the process blocked: the
	// runner keeps less than the cap anyway.
	if keep := min(len(b), outputCap-o.size); keep > 0 {
		o.chunks = append(o.chunks, chunk{stream: w.stream, data: append([]byte(nil), b[:keep]...)})
		o.size += keep
		close(o.more)
		o.more = make(chan struct{})
	}
	return len(b), nil
}

func (o *output) writer(stream int) io.Writer { return streamWriter{o: o, stream: stream} }

func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	close(o.more)
	o.more = make(chan struct{})
}

// copy writes what there is to stdout and stderr (nil discards); with
// follow, it goes on until the process has ended and all is written.
func (o *output) copy(ctx context.Context, follow bool, stdout, stderr io.Writer) error {
	next := 0
	for {
		o.mu.Lock()
		todo := o.chunks[next:]
		closed, more := o.closed, o.more
		o.mu.Unlock()
		for _, c := range todo {
			w := stdout
			if c.stream == 2 {
				w = stderr
			}
			if w == nil {
				continue
			}
			if _, err := w.Write(c.data); err != nil {
				return err
			}
		}
		next += len(todo)
		if !follow || (closed && len(todo) == 0) {
			return nil
		}
		if closed {
			continue // one more pass: chunks written before close
		}
		select {
		case <-more:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
