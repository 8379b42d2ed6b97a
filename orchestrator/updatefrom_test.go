package orchestrator

import (
	"testing"

	"github.com/agoradev/agora/wire"
)

// updateFrom starts from the task the caller has; when that is stale (the
// task changed since), the compare-and-swap fails and fn is applied to the
// task read again: no change is lost, and the caller's copy is untouched.
func TestUpdateFromStale(t *testing.T) {
	t.Parallel()
	o := newListingOrchestrator(t)
	ctx := t.Context()
	tests := []struct {
		name  string
		stale bool
	}{{"current", false}, {"stale", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "upd-" + tt.name
			if _, err := o.Submit(ctx, wire.SubmitRequest{TaskID: id, Subagent: script("s", "true")}); err != nil {
				t.Fatalf("Submit: %v", err)
			}
			read, err := o.store.get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			rounds := len(read.Rounds)
			if tt.stale {
				if _, err := o.store.update(ctx, id, func(t *wire.Task) error {
					t.Rounds[0].Step = 7 // another writer
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			calls := 0
			got, err := o.store.updateFrom(ctx, id, read, func(t *wire.Task) error {
				calls++
				o.nextRound(t, 2, "")
				return nil
			})
			if err != nil {
				t.Fatalf("updateFrom: %v", err)
			}
			wantCalls, wantStep := 1, 0
			if tt.stale {
				wantCalls, wantStep = 2, 7
			}
			if calls != wantCalls || len(got.Rounds) != 2 || got.Rounds[0].Step != wantStep {
				t.Errorf("fn called %d times, %d rounds, step %d; want %d, 2, %d (the other writer's change kept)",
					calls, len(got.Rounds), got.Rounds[0].Step, wantCalls, wantStep)
			}
			if len(read.Rounds) != rounds {
				t.Errorf("the caller's task has %d rounds after updateFrom, want %d: changed in place", len(read.Rounds), rounds)
			}
			stored, err := o.store.get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Revision != got.Revision || len(stored.Rounds) != 2 || stored.Rounds[0].Step != wantStep {
				t.Errorf("stored: revision %d, %d rounds, step %d; want revision %d, 2, %d", stored.Revision, len(stored.Rounds), stored.Rounds[0].Step, got.Revision, wantStep)
			}
		})
	}
}
