package natstest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/agoradev/agora/internal/natsserver/natstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLoggerDropsLinesAfterCleanup(t *testing.T) {
	var log interface{ Info(string, ...any) }
	t.Run("inner", func(t *testing.T) {
		l := natstest.Logger(t)
		l.Info("during the test")
		log = l
	})
	// The inner test and its cleanups are over: t.Log there would panic.
	log.Info("after the test")
}

func TestStartAndRestartKeepPortAndStore(t *testing.T) {
	t.Parallel()
	s := natstest.Start(t)
	s2 := natstest.Restart(t, s)
	if s2.Port() != s.Port() || s2.Config().StoreDir != s.Config().StoreDir {
		t.Fatalf("Restart: %s in %s, want %s in %s", s2.ClientURL(), s2.Config().StoreDir, s.ClientURL(), s.Config().StoreDir)
	}
	if s2.ClientURL() != s.ClientURL() {
		t.Fatalf("Restart: ClientURL %s, want %s", s2.ClientURL(), s.ClientURL())
	}
}
