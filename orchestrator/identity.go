package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agoradev/agora/internal/secrets"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Identity is who calls the orchestrator, as the API authenticated it. A
// call whose context carries none is the operator's (in process, or the
// API without tokens): it sees and does everything.
type Identity struct {
	// Name is the token's name; empty for an unnamed token.
	Name string
	// Admin sees and acts on every task and may use every local secret.
	Admin bool
	// Answerer sees every task and answers any of them, on behalf of a
	// person it names; it acts (cancel, respawn, continue, remove) on its
	// own tasks only.
	Answerer bool
	// LocalSecrets are the local: secrets (their names) the identity may
	// name in the env bundles of what it submits; "*" is all of them.
	LocalSecrets []string
}

// OperatorName is who the history records for the operator without a name.
const OperatorName = "operator"

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity ctx carries, if any.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// caller is the identity of ctx, the operator (Admin) when it has none.
func caller(ctx context.Context) Identity {
	if id, ok := IdentityFrom(ctx); ok {
		return id
	}
	return Identity{Admin: true}
}

// actor is the name the history records for id.
func (id Identity) actor() string {
	if id.Name == "" {
		return OperatorName
	}
	return id.Name
}

// sees reports whether id may read t (and answer it).
func (id Identity) sees(t *wire.Task) bool { return id.seesOwner(t.Owner) }

// seesOwner is sees of a task of owner.
func (id Identity) seesOwner(owner string) bool {
	return id.Admin || id.Answerer || id.Name != "" && owner == id.Name
}

// owns reports whether id may act on t: cancel, respawn, continue, remove.
func (id Identity) owns(t *wire.Task) bool {
	return id.Admin || id.Name != "" && t.Owner == id.Name
}

// mayUseLocal reports whether id may name local secret name.
func (id Identity) mayUseLocal(name string) bool {
	return id.Admin || slices.Contains(id.LocalSecrets, "*") || slices.Contains(id.LocalSecrets, name)
}

// notFound is the error for a task ctx may not see: the same as for a task
// that does not exist, so its existence does not leak.
func notFound(taskID string) error {
	return fmt.Errorf("task %s: %w", taskID, wire.ErrNotFound)
}

// visible reads task id as the caller of ctx may see it.
func (o *Orchestrator) visible(ctx context.Context, id string) (*wire.Task, error) {
	t, err := o.store.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !caller(ctx).sees(t) {
		return nil, notFound(id)
	}
	return t, nil
}

// owned reads task id if the caller of ctx may act on it.
func (o *Orchestrator) owned(ctx context.Context, id string) (*wire.Task, error) {
	t, err := o.store.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !caller(ctx).owns(t) {
		return nil, notFound(id)
	}
	return t, nil
}

// record appends an action to t's history, keeping the submit entry and
// the latest others within wire.MaxHistory.
func (o *Orchestrator) record(t *wire.Task, e wire.HistoryEntry) {
	e.At = o.now()
	t.History = append(t.History, e)
	if n := len(t.History); n > wire.MaxHistory {
		t.History = append(t.History[:1], t.History[n-wire.MaxHistory+1:]...)
	}
}

// maxEnvBundleBytes caps an env bundle read at submit, as the worker caps it.
const maxEnvBundleBytes = 1 << 20

// checkLocalSecrets refuses a request whose env bundles name a local:
// secret the caller may not use: who may use one is the operator's
// configuration, and the check is at submit, since any caller may name a
// registered bundle. A bundle the orchestrator cannot read is refused too
// (the check would otherwise be skipped), unless the caller may use every
// local secret.
func (o *Orchestrator) checkLocalSecrets(ctx context.Context, env []schemas.BundleRef) error {
	id := caller(ctx)
	if id.Admin || slices.Contains(id.LocalSecrets, "*") || len(env) == 0 {
		return nil
	}
	var refused []string
	for _, ref := range env {
		if o.cfg.Store == nil {
			return fmt.Errorf("%w: env bundle %s: this orchestrator has no storage to check which local secrets it names; ask the operator", wire.ErrInvalidRequest, ref.Name)
		}
		key := storage.BlobKey(ref.SHA256)
		if ref.URI != "" {
			k, err := storage.ResolveURI(o.cfg.Store, ref.URI)
			if err != nil {
				return fmt.Errorf("%w: env bundle %s: %v", wire.ErrInvalidRequest, ref.Name, err)
			}
			key = k
		}
		data, err := storage.GetVerified(ctx, o.cfg.Store, key, ref.SHA256, maxEnvBundleBytes)
		if err != nil {
			return fmt.Errorf("%w: env bundle %s cannot be read to check its secrets: %v", wire.ErrInvalidRequest, ref.Name, err)
		}
		var b struct {
			Secrets map[string]string `json:"secrets"`
		}
		if err := schemas.Decode("env bundle "+ref.Name, data, &b); err != nil {
			return fmt.Errorf("%w: %v", wire.ErrInvalidRequest, err)
		}
		for _, sref := range id.refusedLocal(b.Secrets) {
			refused = append(refused, fmt.Sprintf("%s (env bundle %s)", sref, ref.Name))
		}
	}
	return id.localErr(refused)
}

// CheckLocalSecrets refuses secret refs (an env bundle's secrets) that
// name a local: secret the caller of ctx may not use, with ErrInvalidRequest.
func CheckLocalSecrets(ctx context.Context, refs map[string]string) error {
	id := caller(ctx)
	return id.localErr(id.refusedLocal(refs))
}

// refusedLocal returns the local: refs among refs that id may not use.
func (id Identity) refusedLocal(refs map[string]string) []string {
	var out []string
	for _, sref := range refs {
		if scheme, name, _ := secrets.SplitRef(sref); scheme == secrets.SchemeLocal && !id.mayUseLocal(name) {
			out = append(out, sref)
		}
	}
	return out
}

func (id Identity) localErr(refused []string) error {
	if len(refused) == 0 {
		return nil
	}
	sort.Strings(refused)
	who := "this token"
	if id.Name != "" {
		who = "token " + id.Name
	}
	return fmt.Errorf("%w: %s may not use the local secret(s) %s; the operator grants them (--local-secrets NAME=SECRET,…)",
		wire.ErrInvalidRequest, who, strings.Join(slices.Compact(refused), ", "))
}
