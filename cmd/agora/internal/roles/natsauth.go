package roles

import "github.com/agoradev/agora/internal/natsauth"

// NATSAuth is what InitNATSAuth made, for `agora nats-auth init` to print.
type NATSAuth struct {
	// Account is the AGORA account's public key.
	Account string
	// Files are the credentials and configuration written, relative to
	// the directory.
	Files []string
	// ServerConfig is the nats-server include every node needs, and
	// OrchestratorCreds the orchestrators' credentials (both in Files).
	ServerConfig, OrchestratorCreds string
}

// InitNATSAuth makes, or completes, in dir the NATS identities an external
// NATS server or cluster needs for agora, as `agora serve` makes them for
// its embedded one: an operator, the AGORA account capped at diskBytes and
// memBytes of JetStream storage (0: no account cap), a user per role and
// one per runner ID, the workers' scoped signing key, and the nats-server
// configuration include that trusts them. Keys already there are kept.
func InitNATSAuth(dir string, runners []string, diskBytes, memBytes int64) (NATSAuth, error) {
	ids, files, err := natsauth.Init(dir, runners, natsauth.Limits{DiskStorage: diskBytes, MemoryStorage: memBytes})
	if err != nil {
		return NATSAuth{}, err
	}
	return NATSAuth{Account: ids.Account, Files: files,
		ServerConfig: natsauth.ServerConfigFile, OrchestratorCreds: natsauth.OrchestratorCredFile}, nil
}
