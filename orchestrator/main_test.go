package orchestrator

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/agoradev/agora/images/imagestest"
	"github.com/agoradev/agora/internal/testenv"
)

var (
	workerImage string
	dockerErr   error
)

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	image, cleanup, err := imagestest.WorkerImage(ctx, "..")
	cancel()
	workerImage, dockerErr = image, err
	code := testenv.RemovingBinaries(m).Run() // the stand-in claude (claude_e2e_test.go)
	cleanup()
	os.Exit(code)
}
