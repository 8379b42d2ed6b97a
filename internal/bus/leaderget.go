package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsAPIMsgGet is JetStream's stream message-get API for stream name+"":
// only the stream's leader answers it, where a direct get
// ($JS.API.DIRECT.GET, what nats.go's KV uses on a bucket, which allows
// direct gets) is answered by any replica. This package's connections use
// the default API prefix (no JetStream domain).
const jsAPIMsgGet = "$JS.API.STREAM.MSG.GET."

// leaderGetTimeout bounds a leader read whose ctx has no deadline, as
// nats.go bounds its own API requests.
const leaderGetTimeout = 5 * time.Second

// The headers a KV bucket's markers carry, as nats.go's KV reads them.
const (
	kvOperationHeader = "KV-Operation"
	kvOperationDelete = "DEL"
	kvOperationPurge  = "PURGE"
)

// validKey is nats.go's rule for a key (kvs.get refuses any other).
var validKey = regexp.MustCompile(`^[-/_=\.a-zA-Z0-9]+$`)

func keyValid(key string) bool {
	return key != "" && key[0] != '.' && key[len(key)-1] != '.' && !strings.Contains(key, "..") && validKey.MatchString(key)
}

// msgGetRequest and msgGetResponse are the message-get API's JSON.
type msgGetRequest struct {
	LastBySubject string `json:"last_by_subj,omitempty"`
	Sequence      uint64 `json:"seq,omitempty"`
	NextBySubject string `json:"next_by_subj,omitempty"`
}

type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// leaderMsg is one message the stream's leader returned.
type leaderMsg struct {
	Subject  string
	Sequence uint64
	Header   nats.Header
	Data     []byte
	Time     time.Time
}

// leaderNext returns stream's first message at or after seq on filter
// (which may hold wildcards), read from the stream's leader with the
// message-get API whatever the stream's allow_direct says: nats.go's
// Stream.GetMsg makes a direct get, which any replica answers, when the
// stream allows them (the nats CLI creates streams so), and a replica a
// moment behind would not have the last events. No such message is
// jetstream.ErrMsgNotFound, no such stream jetstream.ErrStreamNotFound.
// It needs no STREAM.INFO first.
func (b *Bus) leaderNext(ctx context.Context, stream, filter string, seq uint64) (*leaderMsg, error) {
	return leaderGet(ctx, b.nc, stream, msgGetRequest{Sequence: seq, NextBySubject: filter})
}

// leaderGet asks the leader of stream for the message req names with the
// message-get API. No such message is jetstream.ErrMsgNotFound, no such
// stream jetstream.ErrStreamNotFound.
func leaderGet(ctx context.Context, nc *nats.Conn, stream string, req msgGetRequest) (*leaderMsg, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, leaderGetTimeout)
		defer cancel()
	}
	reply, err := nc.RequestWithContext(ctx, jsAPIMsgGet+stream, data)
	if err != nil {
		return nil, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("decode the stream leader's answer: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, jetstream.ErrMsgNotFound
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound:
		return nil, jetstream.ErrStreamNotFound
	case resp.Error != nil:
		return nil, resp.Error
	case resp.Message == nil:
		return nil, jetstream.ErrInvalidJetStreamResponse
	}
	m := &leaderMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence, Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("decode the headers of %s at sequence %d: %w", m.Subject, m.Sequence, err)
		}
	}
	return m, nil
}

// getFromLeader reads key's last message from the leader of the bucket's
// stream and decodes it as nats.go's KV Get does: no message is
// jetstream.ErrKeyNotFound, a delete or purge marker (the client's, or the
// server's own when a key's TTL ran out) jetstream.ErrKeyDeleted with the
// marker's revision, otherwise the value and its revision (the message's
// stream sequence).
func (k *KV) getFromLeader(ctx context.Context, key string) ([]byte, uint64, error) {
	if !keyValid(key) {
		return nil, 0, jetstream.ErrInvalidKey
	}
	subject := "$KV." + k.bucket + "." + key
	m, err := leaderGet(ctx, k.nc, "KV_"+k.bucket, msgGetRequest{LastBySubject: subject})
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, 0, jetstream.ErrKeyNotFound
	case err != nil:
		return nil, 0, err
	case m.Subject != subject:
		return nil, 0, fmt.Errorf("the stream leader answered with a message of %q, not %q", m.Subject, subject)
	}
	if kvOperation(m.Header) != jetstream.KeyValuePut {
		return nil, m.Sequence, jetstream.ErrKeyDeleted
	}
	return m.Data, m.Sequence, nil
}

// kvOperation is what a bucket's message records, read exactly as nats.go's
// KV reads it (kvs.get): its KV-Operation header (DEL: deleted, PURGE:
// purged, any other value: a put); without one, the marker reason the
// server writes when it removes a key itself (MaxAge and Purge: purged,
// Remove: deleted, any other: a put); no header at all is a put.
func kvOperation(h nats.Header) jetstream.KeyValueOp {
	if op := h.Get(kvOperationHeader); op != "" {
		switch op {
		case kvOperationDelete:
			return jetstream.KeyValueDelete
		case kvOperationPurge:
			return jetstream.KeyValuePurge
		}
		return jetstream.KeyValuePut
	}
	switch h.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge", "Purge":
		return jetstream.KeyValuePurge
	case "Remove":
		return jetstream.KeyValueDelete
	}
	return jetstream.KeyValuePut
}

// createOnLeader is nats.go's KV Create with its one read made through the
// stream's leader: the key is written if it has no message yet; when it
// has one, it is read, and written over only when that is a delete or
// purge marker, at the marker's revision. nats.go reads that marker with a
// direct get, so a replica that has not seen a delete would make Create
// refuse a key that is free, and one that has not seen a re-create would
// let it try to write over it (which the revision check then refuses).
func (k *KV) createOnLeader(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	rev, err := k.publishAt(ctx, key, value, 0, ttl)
	if err == nil || !wrongLastSequence(err) {
		return rev, err
	}
	if _, marker, gerr := k.getFromLeader(ctx, key); errors.Is(gerr, jetstream.ErrKeyDeleted) {
		rev, err = k.publishAt(ctx, key, value, marker, ttl)
		if err == nil || !wrongLastSequence(err) {
			return rev, err
		}
	}
	return 0, fmt.Errorf("%w: %w", jetstream.ErrKeyExists, err)
}

// publishAt writes key's value if the key's last message is revision rev
// (0: it has none), kept ttl (0: as the bucket keeps it), as nats.go's KV
// writes (kvs.updateRevision).
func (k *KV) publishAt(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	if !keyValid(key) {
		return 0, jetstream.ErrInvalidKey
	}
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(rev)}
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	ack, err := k.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + k.bucket + "." + key, Header: nats.Header{}, Data: value}, opts...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// wrongLastSequence reports a revision check the server refused.
func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
