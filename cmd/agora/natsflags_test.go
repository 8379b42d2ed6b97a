package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agoradev/agora/cmd/agora/internal/roles"
)

// TestNATSAuthFlags: the roles take the usual NATS credentials for --nats,
// one kind at a time, the password preferably from the environment; the
// embedded server takes none (it has its own identities).
func TestNATSAuthFlags(t *testing.T) {
	t.Parallel()
	home := []string{"HOME=" + t.TempDir()}
	nats := []string{"--nats", "nats://127.0.0.1:4222"}
	f, err := parseRunnerFlags(append(nats, "--nats-user", "runner"), append(home, "AGORA_NATS_PASSWORD=pw"), &bytes.Buffer{})
	if err != nil || f.auth.User != "runner" || f.auth.Password != "pw" {
		t.Fatalf("parseRunnerFlags(--nats-user runner) = %+v, %v; want user runner, password from $AGORA_NATS_PASSWORD", f.auth, err)
	}
	f, err = parseRunnerFlags(append(nats, "--nats-creds", "r.creds", "--nats-tls-ca", "ca.pem", "--worker-nats", "nats://10.0.0.1:4222",
		"--worker-nats-signer", "w.nk"), home, &bytes.Buffer{})
	if err != nil || f.auth.CredsFile != "r.creds" || f.auth.TLSCA != "ca.pem" || f.signerFile != "w.nk" {
		t.Fatalf("parseRunnerFlags(--nats-creds, --nats-tls-ca, --worker-nats-signer) = %+v, %v", f, err)
	}
	f, err = parseRunnerFlags(append(nats, "--nats-replicas", "3"), home, &bytes.Buffer{})
	if err != nil || f.natsAuth.replicas != 3 {
		t.Fatalf("parseRunnerFlags(--nats-replicas 3) = %d, %v; want 3", f.natsAuth.replicas, err)
	}
	if f, err = parseRunnerFlags(append(nats, "--nats-allow-anonymous"), home, &bytes.Buffer{}); err != nil ||
		!f.natsAuth.config(roles.Config{}).NATSAllowAnonymous {
		t.Fatalf("parseRunnerFlags(--nats-allow-anonymous) = %+v, %v; want it in the roles' config", f.natsAuth, err)
	}
	if sf, err := parseServeFlags(append(nats, "--nats-allow-anonymous"), home, &bytes.Buffer{}); err != nil || !sf.cfg.NATSAllowAnonymous {
		t.Fatalf("parseServeFlags(--nats-allow-anonymous) = %v, %v; want it in the config", sf.cfg.NATSAllowAnonymous, err)
	}
	for _, tc := range []struct {
		role    string
		args    []string
		wantErr string
	}{
		{"runner", append(nats, "--nats-creds", "a.creds", "--nats-user", "u"), "use one of a creds file, an nkey seed or a user and password"},
		{"runner", append(nats, "--nats-password", "p"), "a password needs a user"},
		{"runner", append(nats, "--nats-tls-cert", "c.pem"), "needs both the cert and the key"},
		{"runner", append(nats, "--nats-creds", "a.creds", "--worker-nats-signer", "w.nk"), "--worker-nats-signer mints credentials for --worker-nats"},
		{"runner", append(nats, "--worker-nats", "nats://10.0.0.1:4222", "--worker-nats-signer", "w.nk"), "needs --nats-creds"},
		{"serve", []string{"--nats-creds", "a.creds"}, "are for the server at --nats"},
		{"runner", append(nats, "--nats-replicas", "0"), "--nats-replicas 0: want 1-5"},
		{"runner", append(nats, "--nats-replicas", "7"), "--nats-replicas 7: want 1-5"},
		{"serve", []string{"--nats-replicas", "3"}, "needs --nats: the embedded server is one node"},
	} {
		var err error
		if tc.role == "runner" {
			_, err = parseRunnerFlags(tc.args, home, &bytes.Buffer{})
		} else {
			_, err = parseServeFlags(tc.args, home, &bytes.Buffer{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s %q: error %v, want one containing %q", tc.role, tc.args, err, tc.wantErr)
		}
	}
}
