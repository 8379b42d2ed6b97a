package answer_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/wire"
)

func ExampleParseRoute() {
	steps, err := wire.ParseRoute("memory,lookup,agent:triage=2m,human=24h")
	if err != nil {
		panic(err)
	}
	for _, s := range steps {
		fmt.Println(s.Answerer, s.Timeout)
	}
	// Output:
	// memory 30s
	// lookup 30s
	// agent:triage 2m0s
	// human 24h0m0s
}

func ExampleValidateAnswer() {
	q := answer.Question{Question: "Rewrite A or B?", Options: []string{"A", "B"}}
	for _, a := range []string{"b", "1", "C"} {
		got, err := answer.ValidateAnswer(q, a)
		fmt.Printf("%q %v\n", got, err)
	}
	// Output:
	// "B" <nil>
	// "A" <nil>
	// "" answer "C" is not one of: A, B (or 1-2)
}

// A webhook receiver checks the signature and the timestamp's age before
// trusting the question, then answers (200), declines (204) or promises an
// answer through the API later (202).
func ExampleVerifySignature() {
	const secret = "from-your-config"
	handler := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ts := r.Header.Get(answer.HeaderTimestamp)
		if err := answer.VerifySignature(secret, ts, body, r.Header.Get(answer.HeaderSignature)); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if err := answer.VerifyTimestamp(ts, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var q answer.Question
		if err := json.Unmarshal(body, &q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(q.Options) == 0 {
			w.WriteHeader(http.StatusNoContent) // decline: not for us
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"answer": q.Options[0], "by": "first-option-bot"})
	}
	_ = http.HandlerFunc(handler)
}
