package orchestrator

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// headSeeds are stored tasks and the edges of encoding/json's reading that
// a stored value could reach: names in another case or given twice,
// invalid UTF-8, nulls, unknown members, numbers in other forms.
func headSeeds(t testing.TB) [][]byte {
	t.Helper()
	var seeds [][]byte
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for _, i := range []int{0, 20, 40, 500} { // queued, running, needs_input, finished
		data, err := json.Marshal(scaleMixTask(i, now))
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"state":null,"rounds":null,"request":null}`,
		`{"STATE":"finished","Owner":"bob","CREATED_AT":"2026-01-01T00:00:00Z"}`,
		`{"owner":"a","owner":"b","request":{"labels":{"k":"1"}},"request":{"subagent":{"name":"x"}}}`,
		`{"rounds":[{"n":1}],"rounds":[{"n":2,"state":"running"}]}`,
		"{\"owner\":\"al\xffice\",\"request\":{\"labels\":{\"k\xfe\":\"v\\ud800\"}}}",
		`{"created_at":"2026-01-01T00:00:00.123456789+02:00","updated_at":null}`,
		`{"rounds":[{"n":1,"question":{"options":["A"],"default":"A"},"answer":{"value":"A","wait_ms":5}}]}`,
		`{"rounds":[{"n":1,"question":{"options":[ ],"default":null},"usage":{"turns":2,"cost_usd":1.5e-3}}]}`,
		`{"rounds":[{"n":1.0}]}`, `{"rounds":[{"n":"1"}]}`, `{"owner":1}`, `{"created_at":"yesterday"}`,
		`{"costusd":1,"rounds":[{"usage":{"costusd":2,"cost-usd":3,"COST_USD":4}}]}`,
		`{"extra":{"deep":[[[{"x":1}]]]},"state":"queued"}`, `{"state":"queued"} `, `{"state":"queued"}x`,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// checkHeadDecode holds decodeHead to encoding/json: what encoding/json
// reads, decodeHead reads the same; a value only one of them refuses must
// be one encoding/json refuses, so no task the index held before is lost.
func checkHeadDecode(t *testing.T, data []byte) {
	var want, got taskHead
	wantErr := json.Unmarshal(data, &want)
	gotErr := decodeHead(data, &got)
	if wantErr != nil {
		return
	}
	if gotErr != nil {
		t.Fatalf("decodeHead(%q): %v; encoding/json reads it", data, gotErr)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w, g) {
		t.Fatalf("decodeHead(%q)\n got %s\nwant %s (encoding/json)", data, g, w)
	}
}

func TestHeadDecodesAsEncodingJSON(t *testing.T) {
	for _, seed := range headSeeds(t) {
		checkHeadDecode(t, seed)
	}
}

// FuzzHeadDecode: go test -run '^$' -fuzz FuzzHeadDecode -fuzztime 60s ./orchestrator
func FuzzHeadDecode(f *testing.F) {
	for _, seed := range headSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(checkHeadDecode)
}
