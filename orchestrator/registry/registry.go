// Package registry keeps sub-agents, capabilities and env bundles,
// content-addressed and immutable: registering identical content returns the
// version already there, changed content makes a new version, and a task
// pins the versions it resolved when it was submitted.
//
// Entries live in the JetStream KV bucket agora_registry (one key per
// version, plus a head per name pointing at the latest); capability and env
// bundles live in object storage under blobs/sha256/, where the worker
// fetches and verifies them.
package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/storage"
	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// Bucket is the KV bucket of the registry.
const Bucket = "agora_registry"

// Errors callers branch on (errors.Is).
var (
	ErrNotFound = errors.New("not registered")
	ErrInvalid  = errors.New("invalid registration")
)

var (
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
)

// Registry is the registry on a KV bucket and object storage.
type Registry struct {
	kv    *bus.KV
	store storage.Store
	now   func() time.Time
}

// Open opens (creating if needed) the registry bucket.
func Open(ctx context.Context, b *bus.Bus, store storage.Store) (*Registry, error) {
	if store == nil {
		return nil, errors.New("registry: object storage is required for bundles")
	}
	kv, err := b.KeyValue(ctx, Bucket, "agora registry: sub-agents, capabilities, env bundles")
	if err != nil {
		return nil, err
	}
	return &Registry{kv: kv, store: store, now: time.Now}, nil
}

// head is the per-name pointer at the latest version.
type head struct {
	Latest string `json:"latest"`
	Seq    int    `json:"seq"`
}

func headKey(kind wire.Kind, name string) string { return string(kind) + "." + name }
func versionKey(kind wire.Kind, name, version string) string {
	return string(kind) + "." + name + "." + version
}

// RegisterSubagent registers a sub-agent definition. The capabilities and
// env bundles it names must be registered already (an unpinned name is
// resolved when a task is submitted, so it follows their latest version).
func (r *Registry) RegisterSubagent(ctx context.Context, s wire.Subagent) (wire.Registered, error) {
	if err := validateSubagent(s); err != nil {
		return wire.Registered{}, err
	}
	for _, ref := range s.Capabilities {
		if _, err := r.Get(ctx, wire.KindCapability, ref); err != nil {
			return wire.Registered{}, fmt.Errorf("%w: sub-agent %s: %w", ErrInvalid, s.Name, err)
		}
	}
	for _, ref := range s.Env {
		if _, err := r.Get(ctx, wire.KindEnv, ref); err != nil {
			return wire.Registered{}, fmt.Errorf("%w: sub-agent %s: %w", ErrInvalid, s.Name, err)
		}
	}
	canonical, err := json.Marshal(s)
	if err != nil {
		return wire.Registered{}, fmt.Errorf("encode sub-agent %s: %w", s.Name, err)
	}
	def := s
	e := &wire.Entry{Kind: wire.KindSubagent, Name: s.Name, Digest: digest(canonical), Description: s.Description, Subagent: &def}
	return r.register(ctx, e)
}

// validateSubagent checks what the schema checks, for definitions that
// come through the API rather than a file.
func validateSubagent(s wire.Subagent) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := schemas.Validate(schemas.SchemaSubagent, data); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, err := schemas.CheckNetwork(s.Network, s.Egress); err != nil {
		return fmt.Errorf("%w: sub-agent %s: %v", ErrInvalid, s.Name, err)
	}
	return nil
}

// RegisterCapability registers a capability from its tar (registryfile.PackDir makes one; CheckTar checks it).
func (r *Registry) RegisterCapability(ctx context.Context, name, description string, archive []byte) (wire.Registered, error) {
	if !namePattern.MatchString(name) {
		return wire.Registered{}, fmt.Errorf("%w: capability name %q: letters, digits, '-' and '_', at most 64", ErrInvalid, name)
	}
	files, err := CheckTar(archive, wire.MaxCapabilityBytes)
	if err != nil {
		return wire.Registered{}, fmt.Errorf("%w: capability %s: %v", ErrInvalid, name, err)
	}
	_, ref, err := storage.PutBlob(ctx, r.store, bytes.NewReader(archive))
	if err != nil {
		return wire.Registered{}, fmt.Errorf("store capability %s: %w", name, err)
	}
	e := &wire.Entry{Kind: wire.KindCapability, Name: name, Digest: "sha256:" + ref.SHA256, Description: description,
		Size: ref.Size, Files: files, Bundle: &schemas.BundleRef{Name: name, SHA256: ref.SHA256}}
	return r.register(ctx, e)
}

// RegisterEnv registers an env bundle.
func (r *Registry) RegisterEnv(ctx context.Context, env wire.Env) (wire.Registered, error) {
	data, err := json.Marshal(env)
	if err != nil {
		return wire.Registered{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := schemas.Validate(schemas.SchemaEnv, data); err != nil {
		return wire.Registered{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// The stored bundle is what the worker reads; maps encode sorted, so the
	// same values and refs give the same bytes.
	bundle, err := json.Marshal(struct {
		Values  map[string]string `json:"values"`
		Secrets map[string]string `json:"secrets"`
	}{orEmpty(env.Values), orEmpty(env.Secrets)})
	if err != nil {
		return wire.Registered{}, err
	}
	_, ref, err := storage.PutBlob(ctx, r.store, bytes.NewReader(bundle))
	if err != nil {
		return wire.Registered{}, fmt.Errorf("store env %s: %w", env.Name, err)
	}
	shown := env
	e := &wire.Entry{Kind: wire.KindEnv, Name: env.Name, Digest: "sha256:" + ref.SHA256, Description: env.Description,
		Env: &shown, Size: ref.Size, Bundle: &schemas.BundleRef{Name: env.Name, SHA256: ref.SHA256}}
	return r.register(ctx, e)
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// register stores e as a new version unless the same content is there, and
// moves the name's head to it. The head is compare-and-swapped, so two
// registrations of one name at once get distinct sequence numbers.
func (r *Registry) register(ctx context.Context, e *wire.Entry) (wire.Registered, error) {
	e.Version = strings.TrimPrefix(e.Digest, "sha256:")[:12]
	if e.Bundle != nil {
		e.Bundle.Name = e.Ref()
	}
	vkey, hkey := versionKey(e.Kind, e.Name, e.Version), headKey(e.Kind, e.Name)
	// A lost race on the head is retried at once (the next read sees the
	// winner), up to 22 tries; every other error stands.
	reg, err := backoff.Retry(ctx, func() (wire.Registered, error) {
		if existing, err := r.entry(ctx, vkey); err == nil {
			return wire.Registered{Entry: existing}, nil
		} else if !errors.Is(err, ErrNotFound) {
			return wire.Registered{}, backoff.Permanent(err)
		}
		var h head
		data, rev, err := r.kv.Get(ctx, hkey)
		switch {
		case errors.Is(err, bus.ErrKeyNotFound):
			rev = 0
		case err != nil:
			return wire.Registered{}, backoff.Permanent(err)
		default:
			if err := json.Unmarshal(data, &h); err != nil {
				return wire.Registered{}, backoff.Permanent(fmt.Errorf("decode %s: %w", hkey, err))
			}
		}
		if rev != 0 && h.Latest == e.Version {
			// Another registration of this very content claimed the head;
			// its version key follows at once, unless it died in between.
			if existing, err := r.waitEntry(ctx, vkey); err == nil {
				return wire.Registered{Entry: existing}, nil
			}
			e.Seq, e.CreatedAt = h.Seq, r.now().UTC()
			return permanent(r.putVersion(ctx, vkey, e))
		}
		e.Seq = h.Seq + 1
		e.CreatedAt = r.now().UTC()
		hdata, _ := json.Marshal(head{Latest: e.Version, Seq: e.Seq})
		// Claim the sequence number first: the version key is written only
		// by the registration that won the head.
		if rev == 0 {
			_, err = r.kv.Create(ctx, hkey, hdata)
		} else {
			_, err = r.kv.Update(ctx, hkey, hdata, rev)
		}
		if errors.Is(err, bus.ErrKeyExists) || errors.Is(err, bus.ErrRevision) {
			return wire.Registered{}, errHeadMoved
		}
		if err != nil {
			return wire.Registered{}, backoff.Permanent(fmt.Errorf("register %s %s: %w", e.Kind, e.Name, err))
		}
		return permanent(r.putVersion(ctx, vkey, e))
	}, backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(22), backoff.WithMaxElapsedTime(0))
	if errors.Is(err, errHeadMoved) {
		return wire.Registered{}, fmt.Errorf("register %s %s: the name keeps changing under us", e.Kind, e.Name)
	}
	return reg, err
}

// errHeadMoved is a lost race on a name's head: register tries again.
var errHeadMoved = errors.New("head moved")

// permanent marks err, if any, as not worth another try.
func permanent(reg wire.Registered, err error) (wire.Registered, error) {
	return reg, backoff.Permanent(err)
}

// putVersion writes a version whose seq the head holds.
func (r *Registry) putVersion(ctx context.Context, vkey string, e *wire.Entry) (wire.Registered, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return wire.Registered{}, err
	}
	if _, err := r.kv.Put(ctx, vkey, data); err != nil {
		return wire.Registered{}, fmt.Errorf("register %s %s: %w", e.Kind, e.Ref(), err)
	}
	return wire.Registered{Entry: e, Created: true}, nil
}

// waitEntry waits up to a second for a version key another registration is
// about to write.
func (r *Registry) waitEntry(ctx context.Context, key string) (*wire.Entry, error) {
	deadline := time.Now().Add(time.Second)
	for {
		e, err := r.entry(ctx, key)
		if !errors.Is(err, ErrNotFound) || time.Now().After(deadline) {
			return e, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *Registry) entry(ctx context.Context, key string) (*wire.Entry, error) {
	data, _, err := r.kv.Get(ctx, key)
	if errors.Is(err, bus.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var e wire.Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("decode %s: %w", key, err)
	}
	return &e, nil
}

// ParseRef is wire.ParseRef, its error an ErrInvalid.
func ParseRef(ref string) (name, version string, err error) {
	name, version, err = wire.ParseRef(ref)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return name, version, nil
}

// Get returns the entry ref names: NAME is the latest version.
func (r *Registry) Get(ctx context.Context, kind wire.Kind, ref string) (*wire.Entry, error) {
	name, version, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	latest := version == ""
	if latest {
		data, _, err := r.kv.Get(ctx, headKey(kind, name))
		if errors.Is(err, bus.ErrKeyNotFound) {
			return nil, fmt.Errorf("%s %s: %w (see 'agora %s list')", kind, name, ErrNotFound, kind)
		}
		if err != nil {
			return nil, err
		}
		var h head
		if err := json.Unmarshal(data, &h); err != nil {
			return nil, fmt.Errorf("decode %s %s: %w", kind, name, err)
		}
		version = h.Latest
	}
	e, err := r.entry(ctx, versionKey(kind, name, version[:12]))
	if errors.Is(err, ErrNotFound) && latest {
		// The head names a version whose registration died before writing
		// it: the latest that exists stands.
		if versions, verr := r.Versions(ctx, kind, name); verr == nil {
			return versions[len(versions)-1], nil
		}
	}
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%s %s@%s: %w (see 'agora %s show %s')", kind, name, version, ErrNotFound, kind, name)
	}
	if err != nil {
		return nil, err
	}
	if len(version) == 64 && e.Digest != "sha256:"+version {
		return nil, fmt.Errorf("%s %s@%s: %w", kind, name, version, ErrNotFound)
	}
	return e, nil
}

// Versions returns every version of a name, oldest first.
func (r *Registry) Versions(ctx context.Context, kind wire.Kind, name string) ([]*wire.Entry, error) {
	if !namePattern.MatchString(name) {
		return nil, fmt.Errorf("%w: name %q", ErrInvalid, name)
	}
	prefix := string(kind) + "." + name + "."
	var out []*wire.Entry
	err := r.kv.Each(ctx, func(key string, value []byte, _ uint64) error {
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		var e wire.Entry
		if err := json.Unmarshal(value, &e); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
		out = append(out, &e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s %s: %w (see 'agora %s list')", kind, name, ErrNotFound, kind)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// List returns the latest version of every name of kind, by name.
func (r *Registry) List(ctx context.Context, kind wire.Kind) ([]*wire.Entry, error) {
	latest := map[string]*wire.Entry{}
	prefix := string(kind) + "."
	err := r.kv.Each(ctx, func(key string, value []byte, _ uint64) error {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok || !strings.Contains(rest, ".") {
			return nil
		}
		var e wire.Entry
		if err := json.Unmarshal(value, &e); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
		if cur := latest[e.Name]; cur == nil || e.Seq > cur.Seq {
			latest[e.Name] = &e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*wire.Entry, 0, len(latest))
	for _, e := range latest {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Resolve pins a sub-agent ref and everything it names.
func (r *Registry) Resolve(ctx context.Context, ref string) (*Resolved, error) {
	e, err := r.Get(ctx, wire.KindSubagent, ref)
	if err != nil {
		return nil, err
	}
	s := e.Subagent
	if s == nil {
		return nil, fmt.Errorf("sub-agent %s has no definition", e.Ref())
	}
	res := &Resolved{Entry: e, Subagent: s.Spec(), Pins: wire.Pins{Subagent: e.Ref()}}
	res.Subagent.Version = e.Digest
	for _, c := range s.Capabilities {
		ce, err := r.Get(ctx, wire.KindCapability, c)
		if err != nil {
			return nil, fmt.Errorf("sub-agent %s: %w", e.Ref(), err)
		}
		res.Capabilities = append(res.Capabilities, *ce.Bundle)
		res.Pins.Capabilities = append(res.Pins.Capabilities, ce.Ref())
	}
	for _, v := range s.Env {
		ve, err := r.Get(ctx, wire.KindEnv, v)
		if err != nil {
			return nil, fmt.Errorf("sub-agent %s: %w", e.Ref(), err)
		}
		res.Env = append(res.Env, *ve.Bundle)
		res.Pins.Env = append(res.Pins.Env, ve.Ref())
	}
	return res, nil
}
