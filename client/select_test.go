package client_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/wire"
)

func TestCompareNatural(t *testing.T) {
	t.Parallel()
	ids := []string{"b-10", "b-2", "b-1", "a-3", "b-02x", "b-20"}
	slices.SortFunc(ids, client.CompareNatural)
	if want := []string{"a-3", "b-1", "b-2", "b-02x", "b-10", "b-20"}; !slices.Equal(ids, want) {
		t.Errorf("sorted = %v, want %v", ids, want)
	}
	tasks := []*wire.Task{{ID: "b-10"}, {ID: "b-9"}}
	client.SortBatchTasks(tasks)
	if tasks[0].ID != "b-9" {
		t.Errorf("SortBatchTasks put %s first, want b-9", tasks[0].ID)
	}
}

func TestSelectArtifacts(t *testing.T) {
	t.Parallel()
	list := []wire.Artifact{{Name: "a.txt"}, {Name: "out/b.bin"}}
	for _, tc := range []struct {
		name    string
		names   []string
		want    []string
		wantErr string
	}{
		{"none named is all", nil, []string{"a.txt", "out/b.bin"}, ""},
		{"in the order named", []string{"out/b.bin", "a.txt"}, []string{"out/b.bin", "a.txt"}, ""},
		{"a missing name lists what there is", []string{"c"}, nil, `no artifact "c" (it has: a.txt, out/b.bin)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := client.SelectArtifacts(list, tc.names)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			var names []string
			for _, f := range got {
				names = append(names, f.Name)
			}
			if err != nil || !slices.Equal(names, tc.want) {
				t.Errorf("SelectArtifacts = %v, %v; want %v", names, err, tc.want)
			}
		})
	}
	if _, err := client.SelectArtifacts(nil, []string{"x"}); err == nil || !strings.Contains(err.Error(), "it has: none") {
		t.Errorf("from no artifacts: %v; want it has: none", err)
	}
}

func TestTaskResultInline(t *testing.T) {
	t.Parallel()
	// No server: an inline result and no result at all are answered
	// without a call (the ref case is TestResultVerbs in cmd/agora, through
	// the real API).
	c := client.New("http://127.0.0.1:1", "")
	got, err := c.TaskResult(context.Background(), &wire.Task{ID: "t-1", Result: json.RawMessage(`"hi"`)})
	if err != nil || string(got) != `"hi"` {
		t.Errorf("inline = %s, %v", got, err)
	}
	if got, err := c.TaskResult(context.Background(), &wire.Task{ID: "t-2"}); err != nil || got != nil {
		t.Errorf("none = %s, %v; want nil", got, err)
	}
}
