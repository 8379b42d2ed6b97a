package exit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agoradev/agora/internal/exit"
)

func TestResultSuccessful(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  exit.Result
		want bool
	}{
		{"zero", exit.Result{}, true},
		{"exit 1", exit.Result{ExitCode: 1}, false},
		{"killed", exit.Result{ExitCode: 137, Signal: "SIGKILL"}, false},
		{"signal, code 0", exit.Result{Signal: "SIGTERM"}, false},
		{"oom", exit.Result{OOMKilled: true}, false},
		{"cancelled", exit.Result{Err: context.Canceled}, false},
		{"never ran", exit.Result{ExitCode: -1, Err: errors.New("CannotPullContainerError")}, false},
	}
	for _, tt := range tests {
		if got := tt.res.Successful(); got != tt.want {
			t.Errorf("%s: %+v.Successful() = %v, want %v", tt.name, tt.res, got, tt.want)
		}
	}
}
