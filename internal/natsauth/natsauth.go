// Package natsauth makes and keeps the NATS identities of an agora
// installation with NATS's own decentralised auth (nkeys and JWTs): an
// operator, a system account, the AGORA account that holds agora's streams
// and buckets, the orchestrator's and the runner's user credentials, and a
// scoped signing key from which the runner mints one short-lived user per
// dispatch for a worker that publishes its own events.
//
// The embedded server (internal/natsserver) trusts the operator and loads
// the two account JWTs into a memory resolver; nothing is accepted without a
// user JWT signed by the AGORA account (or its scoped key).
//
// A worker user can do only what its signing key's scope allows, whatever
// the JWT says (nats-server applies the scope's template, not the user's
// own permissions): publish agora.events.<id> and agora.logs.<id>, and
// receive JetStream's acknowledgements on its own inbox
// bus.WorkerInboxPrefix(id). <id> is the user's name, the dispatch id.
//
// It imports github.com/nats-io/jwt/v2 and nkeys only (internal/bus's tests
// use it); the worker does not link it.
package natsauth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Account names.
const (
	AccountName       = "AGORA"
	SystemAccountName = "SYS"
	// WorkerRole is the role of the account's scoped signing key for workers.
	WorkerRole = "agora-worker"
)

// Files in the identity directory. Seeds and credentials are 0600, the
// directory 0700.
const (
	operatorSeedFile     = "operator.nk"
	systemSeedFile       = "sys-account.nk"
	accountSeedFile      = "agora-account.nk"
	OrchestratorCredFile = "orchestrator.creds"
	RunnerCredFile       = "runner.creds"
	// WorkerSignerFile is the seed of the account's scoped signing key for
	// workers (see WorkerScope).
	WorkerSignerFile = "worker-signer.nk"
)

// WorkerScope is the permission template of the workers' signing key;
// {{name()}} is the user's name, the dispatch id.
func WorkerScope() jwt.UserPermissionLimits {
	s := jwt.NewUserScope()
	// bus.EventSubject, bus.LogSubject and bus.WorkerInboxPrefix, spelt
	// out (bus's tests import this package); bus.TestWorkerCredentialsScoped
	// holds them together.
	s.Template.Pub.Allow.Add("agora.events.{{name()}}", "agora.logs.{{name()}}")
	s.Template.Sub.Allow.Add("_AGORA_INBOX.{{name()}}.>")
	return s.Template
}

// OrchestratorBuckets are the KV buckets only the orchestrator writes
// (orchestrator.TaskBucket, IndexBucket, MemoryBucket, ParkedBucket,
// registry.Bucket and slackanswer.Bucket, whose click records answer
// questions, spelt out: this package imports nothing of the module;
// stack.TestEmbeddedNATSRequiresCredentials holds them together).
var OrchestratorBuckets = []string{"agora_tasks", "agora_dispatch_index", "agora_memory", "agora_parked_events", "agora_registry", "agora_slack", "agora_sessions"}

// RunnerPermissions are the runner user's: everything in the account but
// writing the orchestrator's buckets (a put, a delete, a change to their
// streams), so stolen runner credentials cannot rewrite a task.
func RunnerPermissions() jwt.UserPermissionLimits {
	var p jwt.UserPermissionLimits
	for _, b := range OrchestratorBuckets {
		p.Pub.Deny.Add("$KV."+b+".>",
			"$JS.API.STREAM.CREATE.KV_"+b, "$JS.API.STREAM.UPDATE.KV_"+b, "$JS.API.STREAM.DELETE.KV_"+b,
			"$JS.API.STREAM.PURGE.KV_"+b, "$JS.API.STREAM.MSG.DELETE.KV_"+b)
	}
	return p
}

// Identities are the keys and JWTs an embedded server needs, and where the
// clients' credentials are.
type Identities struct {
	// Dir holds the seeds and credentials.
	Dir string
	// OperatorJWT is the self-signed operator the server trusts.
	OperatorJWT string
	// SystemAccount is the system account's public key.
	SystemAccount string
	// Account is the AGORA account's public key.
	Account string
	// AccountJWTs maps account public keys to their JWTs (system and AGORA)
	// for the server's resolver.
	AccountJWTs map[string]string
}

// Path is the path of a file in the identity directory.
func (id *Identities) Path(name string) string { return filepath.Join(id.Dir, name) }

// Ensure loads the identities kept in dir, making what is missing: on first
// start every seed and both credential files. The JWTs of the operator and
// the accounts are signed again on every call from the kept seeds, so a
// newer agora's permissions apply after an upgrade; users' credentials stay
// valid because the account keys do not change.
func Ensure(dir string) (*Identities, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats identities: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats identities: %w", err)
	}
	op, err := loadOrCreate(filepath.Join(dir, operatorSeedFile), nkeys.PrefixByteOperator)
	if err != nil {
		return nil, err
	}
	sys, err := loadOrCreate(filepath.Join(dir, systemSeedFile), nkeys.PrefixByteAccount)
	if err != nil {
		return nil, err
	}
	acc, err := loadOrCreate(filepath.Join(dir, accountSeedFile), nkeys.PrefixByteAccount)
	if err != nil {
		return nil, err
	}
	signer, err := loadOrCreate(filepath.Join(dir, WorkerSignerFile), nkeys.PrefixByteAccount)
	if err != nil {
		return nil, err
	}
	opPub, _ := op.PublicKey()
	sysPub, _ := sys.PublicKey()
	accPub, _ := acc.PublicKey()
	signerPub, _ := signer.PublicKey()

	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "agora"
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(op)
	if err != nil {
		return nil, fmt.Errorf("nats identities: sign operator: %w", err)
	}
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = SystemAccountName
	sysJWT, err := sc.Encode(op)
	if err != nil {
		return nil, fmt.Errorf("nats identities: sign system account: %w", err)
	}
	ac := jwt.NewAccountClaims(accPub)
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
		Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
	scope := jwt.NewUserScope()
	scope.Key, scope.Role, scope.Template = signerPub, WorkerRole, WorkerScope()
	scope.Description = "one dispatch's worker: its own events and logs, nothing else"
	ac.SigningKeys.AddScopedSigner(scope)
	accJWT, err := ac.Encode(op)
	if err != nil {
		return nil, fmt.Errorf("nats identities: sign account: %w", err)
	}
	// The orchestrator and the runner each have their own key, so either
	// can be revoked alone; the runner may not write the orchestrator's
	// buckets.
	for _, u := range []struct {
		file, name string
		perms      jwt.UserPermissionLimits
	}{{OrchestratorCredFile, "orchestrator", jwt.UserPermissionLimits{}}, {RunnerCredFile, "runner", RunnerPermissions()}} {
		path := filepath.Join(dir, u.file)
		if _, err := os.Stat(path); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("nats identities: %w", err)
		}
		creds, err := userCreds(acc, "", u.name, u.perms, time.Time{})
		if err != nil {
			return nil, err
		}
		if err := writeSecret(path, creds); err != nil {
			return nil, err
		}
	}
	return &Identities{Dir: dir, OperatorJWT: opJWT, SystemAccount: sysPub, Account: accPub,
		AccountJWTs: map[string]string{sysPub: sysJWT, accPub: accJWT}}, nil
}

// Signer mints worker credentials with the account's scoped signing key.
type Signer struct {
	key     nkeys.KeyPair
	account string
}

// NewSigner makes a Signer from the seed of a scoped signing key (the
// contents of WorkerSignerFile, or an nsc-made key with WorkerScope's
// template) of the account with public key account.
func NewSigner(seed []byte, account string) (*Signer, error) {
	kp, err := nkeys.ParseDecoratedNKey(seed)
	if err != nil {
		return nil, fmt.Errorf("worker signing key: %w", err)
	}
	if pub, _ := kp.PublicKey(); !nkeys.IsValidPublicAccountKey(pub) {
		return nil, errors.New("worker signing key: not an account key")
	}
	if !nkeys.IsValidPublicAccountKey(account) {
		return nil, fmt.Errorf("worker signing key: account %q is not an account public key", account)
	}
	return &Signer{key: kp, account: account}, nil
}

// LoadSigner reads a signing key seed file; the account is the issuer
// account of the user JWT in credsFile (the workers belong to the runner's
// account).
func LoadSigner(seedFile, credsFile string) (*Signer, error) {
	seed, err := os.ReadFile(seedFile)
	if err != nil {
		return nil, fmt.Errorf("worker signing key: %w", err)
	}
	account, err := CredsAccount(credsFile)
	if err != nil {
		return nil, err
	}
	return NewSigner(seed, account)
}

// CredsAccount is the account of the user whose credentials file is at path.
func CredsAccount(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("nats credentials: %w", err)
	}
	tok, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return "", fmt.Errorf("nats credentials %s: %w", path, err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return "", fmt.Errorf("nats credentials %s: %w", path, err)
	}
	if uc.IssuerAccount != "" {
		return uc.IssuerAccount, nil
	}
	return uc.Issuer, nil
}

// LoadSigner is the workers' signer of these identities.
func (id *Identities) LoadSigner() (*Signer, error) {
	seed, err := os.ReadFile(id.Path(WorkerSignerFile))
	if err != nil {
		return nil, fmt.Errorf("worker signing key: %w", err)
	}
	return NewSigner(seed, id.Account)
}

// Worker mints the credentials (a creds file's contents) of dispatchID's
// worker, valid until expires. What they allow is the signing key's scope
// (WorkerScope), with the dispatch id as the user's name.
func (s *Signer) Worker(dispatchID string, expires time.Time) ([]byte, error) {
	if dispatchID == "" || strings.ContainsAny(dispatchID, ".*> \t\r\n") {
		return nil, fmt.Errorf("worker credentials: dispatch id %q is not one subject token", dispatchID)
	}
	return userCreds(s.key, s.account, dispatchID, jwt.UserPermissionLimits{}, expires)
}

// userCreds makes a new user key signed by signer. issuerAccount is set when
// signer is a signing key, not the account's own; a scoped user carries no
// permissions of its own.
func userCreds(signer nkeys.KeyPair, issuerAccount, name string, perms jwt.UserPermissionLimits, expires time.Time) ([]byte, error) {
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("nats user %s: %w", name, err)
	}
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	uc.IssuerAccount = issuerAccount
	if issuerAccount != "" {
		uc.SetScoped(true)
	} else {
		uc.UserPermissionLimits.Permissions = perms.Permissions
	}
	if !expires.IsZero() {
		uc.Expires = expires.Unix()
	}
	tok, err := uc.Encode(signer)
	if err != nil {
		return nil, fmt.Errorf("nats user %s: sign: %w", name, err)
	}
	seed, err := user.Seed()
	if err != nil {
		return nil, fmt.Errorf("nats user %s: %w", name, err)
	}
	creds, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		return nil, fmt.Errorf("nats user %s: %w", name, err)
	}
	return creds, nil
}

// loadOrCreate reads the seed at path or makes one with the prefix.
func loadOrCreate(path string, prefix nkeys.PrefixByte) (nkeys.KeyPair, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(data))))
		if err != nil {
			return nil, fmt.Errorf("nats identities: %s: %w", path, err)
		}
		return kp, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("nats identities: %w", err)
	}
	kp, err := nkeys.CreatePair(prefix)
	if err != nil {
		return nil, fmt.Errorf("nats identities: %w", err)
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("nats identities: %w", err)
	}
	if err := writeSecret(path, append(seed, '\n')); err != nil {
		return nil, err
	}
	return kp, nil
}

// writeSecret writes data to a new 0600 file at path; an existing file is
// never overwritten (two processes starting at once keep the first's).
func writeSecret(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("nats identities: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("nats identities: write %s: %w", path, err)
	}
	return nil
}
