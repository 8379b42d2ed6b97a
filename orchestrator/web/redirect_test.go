package web_test

import (
	"net/http"
	"net/url"
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
