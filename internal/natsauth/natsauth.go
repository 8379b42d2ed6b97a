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
// It imports github.com/nats-io/jwt/v2 and nkeys (internal/bus's tests
// use it); the worker does not link it (docs/architecture.md).
package natsauth

import (
	"encoding/json"
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
// SessionBucket, RulesBucket, TaskIndexBucket, registry.Bucket and slackanswer.Bucket, whose click records answer
// questions, spelt out: this package imports nothing of the module;
// stack.TestEmbeddedNATSRequiresCredentials holds them together).
// RunnerPermissions is an allow-list that names none of them, nor any
// bucket added later.
var OrchestratorBuckets = []string{"agora_tasks", "agora_dispatch_index", "agora_memory", "agora_parked_events", "agora_registry", "agora_slack", "agora_sessions", "agora_rules", "agora_task_index"}

// Names the runner's permissions are written with (bus's, spelt out:
// bus's tests import this package; bus.TestRunnerCredentialsScoped holds
// them together).
const (
	eventStream   = "AGORA_EVENTS"
	queueStream   = "AGORA_QUEUE"
	queueConsumer = "runners"
	controlStream = "AGORA_CONTROL"
	claimBucket   = "agora_claims"
)

// RunnerPermissions are the permissions of runnerID's user: what a runner
// does and nothing else. It
//   - takes requests off AGORA_QUEUE through the shared consumer and
//     acknowledges them; ensures the queue, control and event streams and
//     the claims bucket (create and update, never delete or purge);
//   - reads and writes agora_claims; reads AGORA_CONTROL (cancels) and
//     AGORA_EVENTS (its dispatches' stored events, when it settles one);
//   - publishes events only on its own agora.events.*.<runner_id>
//     (bus.RunnerEventSubject), logs on agora.logs.<dispatch_id>;
//   - subscribes only below its own inbox, bus.RunnerInboxPrefix(runnerID).
//
// So it cannot read or write agora_tasks, the registry, the answers memory,
// the parked events or the Slack bucket, publish an event as another runner,
// the orchestrator or a worker (agora.events.<id>), read the replies the
// orchestrator receives, or follow anybody's live logs.
func RunnerPermissions(runnerID string) jwt.UserPermissionLimits {
	var p jwt.UserPermissionLimits
	api := "$JS.API."
	p.Pub.Allow.Add(api+"INFO",
		api+"CONSUMER.INFO."+queueStream+"."+queueConsumer,
		api+"CONSUMER.CREATE."+queueStream+"."+queueConsumer, api+"CONSUMER.CREATE."+queueStream+"."+queueConsumer+".>",
		api+"CONSUMER.DURABLE.CREATE."+queueStream+"."+queueConsumer,
		api+"CONSUMER.MSG.NEXT."+queueStream+"."+queueConsumer,
		"$JS.ACK."+queueStream+"."+queueConsumer+".>",
		// The control stream is followed with an ordered consumer, made
		// and remade under a random name.
		api+"CONSUMER.CREATE."+controlStream+".>", api+"CONSUMER.DELETE."+controlStream+".>",
		api+"CONSUMER.INFO."+controlStream+".>", api+"CONSUMER.MSG.NEXT."+controlStream+".>",
		"$JS.FC.>",
		"$KV."+claimBucket+".>",
		"agora.events.*."+runnerID,
		"agora.logs.*",
	)
	for _, st := range []string{eventStream, queueStream, controlStream, "KV_" + claimBucket} {
		p.Pub.Allow.Add(api+"STREAM.INFO."+st, api+"STREAM.CREATE."+st, api+"STREAM.UPDATE."+st,
			api+"STREAM.MSG.GET."+st, api+"DIRECT.GET."+st, api+"DIRECT.GET."+st+".>")
	}
	p.Sub.Allow.Add(RunnerInboxPrefix(runnerID) + ".>")
	return p
}

// RunnerInboxPrefix is bus.RunnerInboxPrefix, spelt out.
func RunnerInboxPrefix(runnerID string) string { return "_AGORA_RUNNER." + runnerID }

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

	account nkeys.KeyPair
}

// Path is the path of a file in the identity directory.
func (id *Identities) Path(name string) string { return filepath.Join(id.Dir, name) }

// Ensure loads the identities kept in dir, making what is missing: on first
// start every seed and both credential files. The JWTs of the operator and
// the accounts are signed again on every call from the kept seeds, so a
// newer agora's permissions apply after an upgrade; users' credentials stay
// valid because the account keys do not change.
func Ensure(dir string) (*Identities, error) { return EnsureLimits(dir, Limits{}) }

// Limits are the AGORA account's JetStream limits, in bytes; zero (or
// negative) is no account limit: the servers' own max_file_store and
// max_memory_store bound it.
type Limits struct {
	DiskStorage, MemoryStorage int64
}

// EnsureLimits is Ensure with the account's JetStream limits.
func EnsureLimits(dir string, limits Limits) (*Identities, error) {
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
	if limits.DiskStorage > 0 {
		ac.Limits.JetStreamLimits.DiskStorage = limits.DiskStorage
	}
	if limits.MemoryStorage > 0 {
		ac.Limits.JetStreamLimits.MemoryStorage = limits.MemoryStorage
	}
	scope := jwt.NewUserScope()
	scope.Key, scope.Role, scope.Template = signerPub, WorkerRole, WorkerScope()
	scope.Description = "one dispatch's worker: its own events and logs, nothing else"
	ac.SigningKeys.AddScopedSigner(scope)
	accJWT, err := ac.Encode(op)
	if err != nil {
		return nil, fmt.Errorf("nats identities: sign account: %w", err)
	}
	ids := &Identities{Dir: dir, OperatorJWT: opJWT, SystemAccount: sysPub, Account: accPub,
		AccountJWTs: map[string]string{sysPub: sysJWT, accPub: accJWT}, account: acc}
	// The orchestrator and each runner have their own key, so any can be
	// revoked alone; a runner's user is limited to what a runner does
	// (RunnerCreds).
	if _, err := ids.user(OrchestratorCredFile, "orchestrator", jwt.UserPermissionLimits{}); err != nil {
		return nil, err
	}
	return ids, nil
}

// RunnerCredsFile is the credentials file of runnerID in an identity
// directory made by `agora nats-auth init`: runner-<id>.creds.
func RunnerCredsFile(runnerID string) string { return "runner-" + runnerID + ".creds" }

// RunnerCreds makes (or brings up to date) the credentials of runnerID's
// user in file and returns its path: a user named after the runner with
// RunnerPermissions(runnerID). Its key is kept; its JWT is signed again
// on every call, so the permissions are always this agora's and this id's.
func (id *Identities) RunnerCreds(runnerID, file string) (string, error) {
	if runnerID == "" || strings.ContainsAny(runnerID, "*> \t\r\n") || strings.HasPrefix(runnerID, ".") ||
		strings.HasSuffix(runnerID, ".") || strings.Contains(runnerID, "..") {
		return "", fmt.Errorf("runner credentials: runner id %q cannot end a NATS subject (no '*', '>', white space or empty '.'-parts)", runnerID)
	}
	return id.user(file, runnerID, RunnerPermissions(runnerID))
}

// user writes (or signs again, keeping its key) the credentials of a user
// of the account named name with perms to file in the directory.
func (id *Identities) user(file, name string, perms jwt.UserPermissionLimits) (string, error) {
	path := filepath.Join(id.Dir, file)
	var user nkeys.KeyPair
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if user, err = jwt.ParseDecoratedUserNKey(data); err != nil {
			return "", fmt.Errorf("nats identities: %s: %w", path, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		if user, err = nkeys.CreateUser(); err != nil {
			return "", fmt.Errorf("nats user %s: %w", name, err)
		}
	default:
		return "", fmt.Errorf("nats identities: %w", err)
	}
	if data != nil && sameUser(data, id.Account, name, perms) {
		return path, nil
	}
	creds, err := signUser(id.account, "", user, name, perms, time.Time{})
	if err != nil {
		return "", err
	}
	if data == nil {
		err = writeSecret(path, creds)
	} else {
		err = replaceSecret(path, creds)
	}
	if err != nil {
		return "", err
	}
	return path, nil
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
	return signUser(signer, issuerAccount, user, name, perms, expires)
}

// signUser is userCreds for a given user key.
func signUser(signer nkeys.KeyPair, issuerAccount string, user nkeys.KeyPair, name string, perms jwt.UserPermissionLimits, expires time.Time) ([]byte, error) {
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

// replaceSecret replaces the file at path with a 0600 one holding data,
// atomically (a new file renamed over it).
func replaceSecret(path string, data []byte) error {
	tmp := path + ".new"
	_ = os.Remove(tmp)
	if err := writeSecret(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("nats identities: %w", err)
	}
	return nil
}

// sameUser reports whether the credentials in data are a user of account
// named name with exactly perms, so they need not be signed again.
func sameUser(data []byte, account, name string, perms jwt.UserPermissionLimits) bool {
	tok, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return false
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil || uc.Issuer != account || uc.Name != name || uc.Expires != 0 {
		return false
	}
	have, err1 := json.Marshal(uc.Permissions)
	want, err2 := json.Marshal(perms.Permissions)
	return err1 == nil && err2 == nil && string(have) == string(want)
}

// CheckRunnerCreds reports credentials in path that cannot serve runnerID:
// a user limited to another runner's subjects (its events would be
// refused by the server). A user without limits of its own (an
// orchestrator's, or one an operator made otherwise) passes.
func CheckRunnerCreds(path, runnerID string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("nats credentials: %w", err)
	}
	tok, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return fmt.Errorf("nats credentials %s: %w", path, err)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return fmt.Errorf("nats credentials %s: %w", path, err)
	}
	if len(uc.Pub.Allow) == 0 || uc.Pub.Allow.Contains("agora.events.*."+runnerID) || uc.Pub.Allow.Contains(">") {
		return nil
	}
	return fmt.Errorf("nats credentials %s are runner %q's, not this runner's (--id %s): make its own with `agora nats-auth init DIR --runner %s`", path, uc.Name, runnerID, runnerID)
}

// ServerConfigFile is the nats-server configuration include that Init
// writes: operator mode with agora's operator and accounts.
const ServerConfigFile = "agora-auth.conf"

// ServerConfig is the nats-server configuration that trusts these
// identities: the operator JWT, the system account and a memory resolver
// preloaded with both account JWTs. Every node of a cluster includes the
// same text; a server with it refuses anonymous clients.
func (id *Identities) ServerConfig() string {
	var b strings.Builder
	b.WriteString("# Made by agora nats-auth init; made again (same keys) on every run.\n")
	b.WriteString("# Include it in every node's nats-server.conf: include " + ServerConfigFile + "\n")
	b.WriteString("# Clients need a user of the AGORA account: anonymous ones are refused.\n")
	fmt.Fprintf(&b, "operator: %q\n", id.OperatorJWT)
	fmt.Fprintf(&b, "system_account: %s\n", id.SystemAccount)
	b.WriteString("resolver: MEMORY\nresolver_preload: {\n")
	for _, acc := range []struct{ name, key string }{{SystemAccountName, id.SystemAccount}, {AccountName, id.Account}} {
		fmt.Fprintf(&b, "  # %s\n  %s: %q\n", acc.name, acc.key, id.AccountJWTs[acc.key])
	}
	b.WriteString("}\n")
	return b.String()
}

// Init makes (or keeps, and brings up to date) what an external NATS
// server or cluster needs for agora in dir (0700, every file 0600): the
// seeds, the orchestrator's credentials, one runner-<id>.creds per runner
// id, the workers' scoped signing key, and ServerConfigFile for the
// servers. Run again, it keeps every key: credentials already handed out
// stay valid, and runners can be added. It returns the files it holds.
func Init(dir string, runners []string, limits Limits) (*Identities, []string, error) {
	ids, err := EnsureLimits(dir, limits)
	if err != nil {
		return nil, nil, err
	}
	files := []string{ServerConfigFile, OrchestratorCredFile}
	for _, r := range runners {
		if _, err := ids.RunnerCreds(r, RunnerCredsFile(r)); err != nil {
			return nil, nil, err
		}
		files = append(files, RunnerCredsFile(r))
	}
	files = append(files, WorkerSignerFile)
	conf := []byte(ids.ServerConfig())
	path := ids.Path(ServerConfigFile)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(conf) {
		return ids, files, nil
	} else if err == nil {
		err = replaceSecret(path, conf)
		if err != nil {
			return nil, nil, err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if err := writeSecret(path, conf); err != nil {
			return nil, nil, err
		}
	} else {
		return nil, nil, fmt.Errorf("nats identities: %w", err)
	}
	return ids, files, nil
}
