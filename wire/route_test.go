package wire_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agoradev/agora/wire"
)

func TestParseRoute(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		want    []wire.RouteStep
		wantErr string
	}{
		{spec: "memory,lookup,agent:triage=2m,human=24h", want: []wire.RouteStep{
			{Answerer: "memory", Timeout: 30 * time.Second},
			{Answerer: "lookup", Timeout: 30 * time.Second},
			{Answerer: "agent:triage", Timeout: 2 * time.Minute},
			{Answerer: "human", Timeout: 24 * time.Hour},
		}},
		{spec: " memory , human ", want: []wire.RouteStep{
			{Answerer: "memory", Timeout: wire.DefaultAutomaticTimeout},
			{Answerer: "human", Timeout: wire.DefaultWaitTimeout},
		}},
		{spec: "agent:triage,webhook:https://hooks.example.com/agora,slack:#ops,cli", want: []wire.RouteStep{
			{Answerer: "agent:triage", Timeout: wire.DefaultAgentTimeout},
			{Answerer: "webhook:https://hooks.example.com/agora", Timeout: 24 * time.Hour},
			{Answerer: "slack:#ops", Timeout: 24 * time.Hour},
			{Answerer: "cli", Timeout: 24 * time.Hour},
		}},
		{spec: "lookup:rules/ops.yaml=5s,human=7d", want: []wire.RouteStep{
			{Answerer: "lookup:rules/ops.yaml", Timeout: 5 * time.Second},
			{Answerer: "human", Timeout: 7 * 24 * time.Hour},
		}},
		{spec: "webhook:https://h.example/x?token=abc", want: []wire.RouteStep{
			{Answerer: "webhook:https://h.example/x?token=abc", Timeout: 24 * time.Hour},
		}},
		{spec: "webhook:https://h.example/x?token=abc=1h30m", want: []wire.RouteStep{
			{Answerer: "webhook:https://h.example/x?token=abc", Timeout: 90 * time.Minute},
		}},
		{spec: "slack:#ops?allow=U1+S2,slack:@U9?remind=1h=2h", want: []wire.RouteStep{
			{Answerer: "slack:#ops?allow=U1+S2", Timeout: 24 * time.Hour},
			{Answerer: "slack:@U9?remind=1h", Timeout: 2 * time.Hour},
		}},
		{spec: "", wantErr: "route is empty"},
		{spec: "memory,,human", wantErr: `route step 2 "": empty step`},
		{spec: "memory,human=soon", wantErr: `route step 2 "human=soon": timeout: "soon" is not a duration`},
		{spec: "human=", wantErr: `route step 1 "human=": timeout:`},
		{spec: "human=-1h", wantErr: `route step 1 "human=-1h": timeout: "-1h": must be positive`},
		{spec: "human=0s", wantErr: "must be positive"},
		{spec: "Memory", wantErr: `route step 1 "Memory": answerer name "Memory"`},
		{spec: "memory,agent:", wantErr: `route step 2 "agent:": empty argument after "agent:"`},
		{spec: "=2m", wantErr: `route step 1 "=2m": answerer name ""`},
	}
	for _, tt := range tests {
		got, err := wire.ParseRoute(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRoute(%q) = %v, %v; want error %q", tt.spec, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseRoute(%q) = %v, %v; want %v", tt.spec, got, err, tt.want)
			continue
		}
		// FormatRoute writes what ParseRoute reads.
		again, err := wire.ParseRoute(wire.FormatRoute(got))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("ParseRoute(FormatRoute(%v)) = %v, %v; want the same steps", got, again, err)
		}
	}
}

func TestStepString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		step wire.RouteStep
		want string
	}{
		{wire.RouteStep{Answerer: "memory", Timeout: 30 * time.Second}, "memory=30s"},
		{wire.RouteStep{Answerer: "agent:triage", Timeout: 2 * time.Minute}, "agent:triage=2m"},
		{wire.RouteStep{Answerer: "human", Timeout: 48 * time.Hour}, "human=48h"},
		{wire.RouteStep{Answerer: "human", Timeout: 90 * time.Minute}, "human=90m"},
		{wire.RouteStep{Answerer: "lookup", Timeout: 1500 * time.Millisecond}, "lookup=1.5s"},
	}
	for _, tt := range tests {
		if got := tt.step.String(); got != tt.want {
			t.Errorf("%#v.String() = %q; want %q", tt.step, got, tt.want)
		}
	}
}
