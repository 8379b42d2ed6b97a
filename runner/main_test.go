package runner

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agoradev/agora/images/imagestest"
	"github.com/agoradev/agora/internal/testenv"
)

// workerImage is the worker image built once for these tests, "" when the
// Docker engine is not reachable.
var (
	workerImage string
	dockerErr   error
)

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	image, cleanup, err := imagestest.WorkerImage(ctx, "..")
	cancel()
	workerImage, dockerErr = image, err
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// needDocker skips without a Docker engine, but fails under CI=true.
func needDocker(t *testing.T) {
	t.Helper()
	testenv.NeedDocker(t, workerImage, dockerErr)
}
