package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agoradev/agora/schemas"
)

// Claim is who owns a dispatch: the record in ClaimBucket.
type Claim struct {
	// State is ClaimRunning (a runner took it), ClaimCancelled (a cancel
	// came first; no runner may start it), ClaimLost or ClaimDone.
	State     string `json:"state"`
	Runner    string `json:"runner,omitempty"`
	Container string `json:"container,omitempty"`
	// Previous is, on a claim taken over as lost, the runner that held it
	// before: its terminal event, if it stored one, is the outcome.
	Previous  string    `json:"previous,omitempty"`
	Heartbeat time.Time `json:"heartbeat"`
	Revision  uint64    `json:"-"`
}

// Claim states.
const (
	ClaimRunning   = "running"
	ClaimCancelled = "cancelled"
	// ClaimLost is a claim another runner took over after its runner
	// stopped renewing it; Runner is the one that settled it.
	ClaimLost = "lost"
	// ClaimDone is a claim whose dispatch's outcome is recorded.
	ClaimDone = "done"
)

// ErrClaimed means another claim for the dispatch exists already.
var ErrClaimed = errors.New("dispatch already claimed")

// ErrClaimSettled means a claim records an outcome already: its runner
// marked it done, or a cancel took it before any runner. Nobody may take
// it over.
var ErrClaimSettled = errors.New("claim is settled")

// A Lease is one runner's side of one dispatch's claim: what Claim found
// when the runner was handed the dispatch, and the revision the runner's
// next update is made at. Every update is a compare-and-swap, so a claim
// that a cancel wrote or another runner took over is never overwritten.
// Its methods are safe for concurrent use.
type Lease struct {
	// Settled is the dispatch's terminal event when its outcome is
	// recorded already; then nothing was claimed or read.
	Settled *schemas.Event
	// Created reports that Claim made the claim: the dispatch is the
	// runner's, and nobody started it.
	Created bool
	// Found is the claim that was there already, when Created is false:
	// a cancel's, another runner's, or this runner's own (an earlier
	// process of it).
	Found Claim
	// CancelRequested reports the durable cancel command, read after the
	// claim was made so a cancel that lost the race for it is seen. Read
	// only when the claim is the runner's.
	CancelRequested bool

	b          *Bus
	dispatchID string
	runnerID   string

	mu  sync.Mutex
	rev uint64 // 0: not known (an adopted container's claim)
}

// Claim is the one call a runner makes for a request it was handed: it
// looks up the dispatch's terminal event (a settled dispatch is not
// claimed), creates the runner's claim atomically or reads the one there
// is, and, when the claim is the runner's, reads the durable cancel
// command. An error leaves nothing to undo: a claim it created is the
// runner's, which the request's redelivery finds (Found.Runner).
func (b *Bus) Claim(ctx context.Context, dispatchID, runnerID string) (*Lease, error) {
	l := b.Lease(dispatchID, runnerID)
	ev, err := b.TerminalEvent(ctx, dispatchID)
	if err != nil {
		return nil, fmt.Errorf("claim %s: look up its terminal event: %w", dispatchID, err)
	}
	if ev != nil {
		l.Settled = ev
		return l, nil
	}
	rev, err := b.CreateClaim(ctx, dispatchID, Claim{State: ClaimRunning, Runner: runnerID, Heartbeat: time.Now().UTC()})
	switch {
	case err == nil:
		l.Created, l.rev = true, rev
	case errors.Is(err, ErrClaimed):
		c, err := b.GetClaim(ctx, dispatchID)
		if err != nil {
			return nil, err
		}
		if c == nil {
			// Between our create and get it expired or was removed.
			return nil, fmt.Errorf("claim %s: it vanished while being read", dispatchID)
		}
		l.Found = *c
		if c.Runner != runnerID {
			return l, nil
		}
		l.rev = c.Revision
	default:
		return nil, err
	}
	if l.CancelRequested, err = b.CancelRequested(ctx, dispatchID); err != nil {
		return nil, fmt.Errorf("claim %s: %w", dispatchID, err)
	}
	return l, nil
}

// Lease is runnerID's lease on dispatchID's claim at no known revision:
// for a container the runner adopts. Its first update reads the claim and
// goes ahead only while the claim is runnerID's.
func (b *Bus) Lease(dispatchID, runnerID string) *Lease {
	return &Lease{b: b, dispatchID: dispatchID, runnerID: runnerID}
}

// Renew refreshes the claim's heartbeat, records the dispatch's container,
// and reads the durable cancel command: a runner renews while it holds a
// dispatch, and so acts on a cancel its live watch has not delivered yet
// (one that came while it created the container, say). The cancel is
// reported even when the update failed.
func (l *Lease) Renew(ctx context.Context, containerID string) (cancelRequested bool, err error) {
	uerr := l.update(ctx, Claim{State: ClaimRunning, Runner: l.runnerID, Container: containerID, Heartbeat: time.Now().UTC()})
	cancelRequested, cerr := l.b.CancelRequested(ctx, l.dispatchID)
	return cancelRequested, errors.Join(uerr, cerr)
}

// Done marks the claim done: the dispatch's outcome is recorded.
func (l *Lease) Done(ctx context.Context, containerID string) error {
	return l.update(ctx, Claim{State: ClaimDone, Runner: l.runnerID, Container: containerID, Heartbeat: time.Now().UTC()})
}

// TakeOver records that the runner settles, as lost, a dispatch whose
// claim (Found) another runner stopped renewing. It fails when the claim
// changed since Claim read it (that runner is alive, or another took it
// over first), and with ErrClaimSettled when Found is done or cancelled:
// its outcome is recorded, so declaring it lost would give the dispatch a
// second terminal event. A lost claim whose taker went silent in turn may
// be taken over again.
func (l *Lease) TakeOver(ctx context.Context) error {
	c := l.Found
	if c.State == ClaimDone || c.State == ClaimCancelled {
		return fmt.Errorf("take over claim of %s: it is %s: %w", l.dispatchID, c.State, ErrClaimSettled)
	}
	c.State, c.Runner, c.Previous, c.Heartbeat = ClaimLost, l.runnerID, c.Runner, time.Now().UTC()
	rev, err := l.b.UpdateClaim(ctx, l.dispatchID, c, l.Found.Revision)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.rev = rev
	l.mu.Unlock()
	return nil
}

// update replaces the claim at the lease's revision. When that revision
// is stale or unknown (an adopted container's), the claim is read again
// and replaced at its revision, but only while it is still the runner's.
func (l *Lease) update(ctx context.Context, c Claim) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	rev, err := l.b.UpdateClaim(ctx, l.dispatchID, c, l.rev)
	if err != nil {
		if cur, gerr := l.b.GetClaim(ctx, l.dispatchID); gerr == nil && cur != nil && cur.Runner == l.runnerID {
			rev, err = l.b.UpdateClaim(ctx, l.dispatchID, c, cur.Revision)
		}
	}
	if err != nil {
		return err
	}
	l.rev = rev
	return nil
}

// claims is ClaimBucket, opened on first use and kept: a runner claims,
// renews and settles every dispatch through it. It must exist (EnsureQueue
// makes it); a failed open is tried again on the next call.
func (b *Bus) claims(ctx context.Context) (*KV, error) {
	b.claimsMu.Lock()
	defer b.claimsMu.Unlock()
	if b.claimsKV != nil {
		return b.claimsKV, nil
	}
	kv, err := b.lookupKV(ctx, ClaimBucket)
	if err != nil {
		return nil, err
	}
	b.claimsKV = kv
	return kv, nil
}

// CreateClaim atomically records c for dispatchID; ErrClaimed when a claim
// (a runner's or a cancel's) is there already.
func (b *Bus) CreateClaim(ctx context.Context, dispatchID string, c Claim) (uint64, error) {
	kv, err := b.claims(ctx)
	if err != nil {
		return 0, err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return 0, err
	}
	rev, err := kv.Create(ctx, dispatchID, data)
	if errors.Is(err, ErrKeyExists) {
		return 0, fmt.Errorf("claim %s: %w", dispatchID, ErrClaimed)
	}
	if err != nil {
		return 0, fmt.Errorf("claim %s: %w", dispatchID, err)
	}
	return rev, nil
}

// UpdateClaim replaces the claim at revision rev (compare-and-swap).
func (b *Bus) UpdateClaim(ctx context.Context, dispatchID string, c Claim, rev uint64) (uint64, error) {
	kv, err := b.claims(ctx)
	if err != nil {
		return 0, err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return 0, err
	}
	rev, err = kv.Update(ctx, dispatchID, data, rev)
	if err != nil {
		return 0, fmt.Errorf("update claim %s: %w", dispatchID, err)
	}
	return rev, nil
}

// GetClaim returns dispatchID's claim, nil when there is none.
func (b *Bus) GetClaim(ctx context.Context, dispatchID string) (*Claim, error) {
	kv, err := b.claims(ctx)
	if err != nil {
		return nil, err
	}
	data, rev, err := kv.Get(ctx, dispatchID)
	if errors.Is(err, ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get claim %s: %w", dispatchID, err)
	}
	var c Claim
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decode claim %s: %w", dispatchID, err)
	}
	c.Revision = rev
	return &c, nil
}
