package bus

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// withStream calls fn with the handle of stream name, looked up once and
// kept, as the claims bucket is: looking it up is a STREAM.INFO round trip,
// and the runner read AGORA_CONTROL on every claim and renewal and
// AGORA_EVENTS on every settle. When fn fails through a kept handle (other
// than for a message not found), the handle is dropped and fn runs once
// more on a fresh one, so a stream deleted and made again is found anew.
func (b *Bus) withStream(ctx context.Context, name string, fn func(jetstream.Stream) error) error {
	st, kept, err := b.stream(ctx, name)
	if err != nil {
		return err
	}
	err = fn(st)
	if err == nil || !kept || errors.Is(err, jetstream.ErrMsgNotFound) || ctx.Err() != nil {
		return err
	}
	b.forgetStream(name, st)
	if st, _, err = b.stream(ctx, name); err != nil {
		return err
	}
	return fn(st)
}

// stream is name's handle, kept once looked up; kept says it was.
func (b *Bus) stream(ctx context.Context, name string) (st jetstream.Stream, kept bool, err error) {
	b.streamsMu.Lock()
	st = b.streams[name]
	b.streamsMu.Unlock()
	if st != nil {
		return st, true, nil
	}
	if st, err = b.js.Stream(ctx, name); err != nil {
		return nil, false, err
	}
	b.streamsMu.Lock()
	defer b.streamsMu.Unlock()
	if b.streams == nil {
		b.streams = map[string]jetstream.Stream{}
	}
	b.streams[name] = st
	return st, false, nil
}

// forgetStream drops the kept handle of name, if it is still st.
func (b *Bus) forgetStream(name string, st jetstream.Stream) {
	b.streamsMu.Lock()
	defer b.streamsMu.Unlock()
	if b.streams[name] == st {
		delete(b.streams, name)
	}
}
