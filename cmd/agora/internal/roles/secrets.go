package roles

import "github.com/agoradev/agora/internal/secrets"

// SecretStore is this machine's local secret store (internal/secrets),
// where the local:NAME refs of env bundles find their values when
// dispatches run on `agora serve` or `agora runner --secrets-dir`: what
// `agora secret` manages.
type SecretStore struct{ store *secrets.Store }

// SecretInfo is one secret as `agora secret list` shows it: name, size
// and time, never the value. It is the store's own type, so the JSON
// fields are the store's.
type SecretInfo = secrets.Info

// MaxSecretBytes is the most a secret may hold.
const MaxSecretBytes = secrets.MaxValueBytes

// ErrNoSecret is what Delete returns for a name the store does not hold.
var ErrNoSecret = secrets.ErrNotFound

// ValidSecretName reports, in words, why name cannot name a secret.
func ValidSecretName(name string) error { return secrets.ValidName(name) }

// OpenSecretStore is the store in dir (made on the first Set).
func OpenSecretStore(dir string) SecretStore { return SecretStore{secrets.Open(dir)} }

// Dir is the store's directory.
func (s SecretStore) Dir() string { return s.store.Dir() }

// Set stores value under name and reports whether it replaced a value
// there before.
func (s SecretStore) Set(name string, value []byte) (replaced bool, err error) {
	_, getErr := s.store.Get(name)
	if err := s.store.Set(name, value); err != nil {
		return false, err
	}
	return getErr == nil, nil
}

// List is every secret in the store by name; empty, never nil, when there
// is none (so JSON shows []).
func (s SecretStore) List() ([]SecretInfo, error) {
	infos, err := s.store.List()
	if infos == nil && err == nil {
		infos = []SecretInfo{}
	}
	return infos, err
}

// Delete removes the secret name; ErrNoSecret when there is none.
func (s SecretStore) Delete(name string) error {
	return s.store.Delete(name)
}
