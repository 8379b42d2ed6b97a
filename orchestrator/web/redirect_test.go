package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestLoginRedirectStaysLocal: the sign-in page of a server without
// tokens redirects at once — to this site, whatever next says.
func TestLoginRedirectStaysLocal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.browser()
	for _, next := range []string{"/%09/evil.example/x", "/%09%5Cevil.example", "/%0a/evil.example", "%2F%2Fevil.example"} {
		status, loc, _ := b.get("/ui/login?next=" + next)
		if status != http.StatusSeeOther || (loc != "/" && loc != "/%09/evil.example/x") {
			t.Errorf("GET /ui/login?next=%s without tokens: %d to %q, want 303 to a path of this site", next, status, loc)
		}
		if u, err := url.Parse(loc); err != nil || u.Host != "" || len(loc) > 1 && (loc[1] == '/' || loc[1] == '\\' || loc[1] == '\t') {
			t.Errorf("GET /ui/login?next=%s: Location %q leaves the site", next, loc)
		}
	}
}

// endless is a body of n bytes that is never held in memory.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), e.n)
	for i := range p[:k] {
		p[i] = 'a'
	}
	e.n -= k
	return int(k), nil
}

// TestSignInBounded: a sign-in form is read only up to its small cap (a
// 50 MB post is refused, 413, after 8 KiB), and failed sign-ins from one
// client are limited: after ten, 429 with Retry-After, the right token
// included, until the limit refills.
func TestSignInBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "alice:wonderland:answerer")
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/ui/login", &endless{n: 50 << 20})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 50 << 20
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("POST /ui/login of 50 MB: %d, want 413", resp.StatusCode)
		}
	} // else: the server closed the connection mid-body, which refuses it too

	b := f.browser()
	for i := range 10 {
		if status, _, _ := b.do(http.MethodPost, "/ui/login", url.Values{"token": {fmt.Sprintf("guess-%d", i)}}); status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i, status)
		}
	}
	req, _ = http.NewRequest(http.MethodPost, f.srv.URL+"/ui/login", strings.NewReader(url.Values{"token": {"wonderland"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("sign-in after 10 failures: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
