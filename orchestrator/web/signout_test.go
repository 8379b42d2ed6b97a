package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agoradev/agora/internal/bus/bustest"
	"github.com/agoradev/agora/internal/natsserver/natstest"
	"github.com/agoradev/agora/internal/storage/storagetest"
	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/orchestrator/answer"
	"github.com/agoradev/agora/orchestrator/api"
	"github.com/agoradev/agora/orchestrator/web"
)

// replica is one orchestrator's web inbox on a bus shared with others.
func replica(t *testing.T, f *fixture, tokens ...string) *httptest.Server {
	t.Helper()
	o, err := orchestrator.New(orchestrator.Config{Bus: f.bus, Store: storagetest.FileStore(t), Answerers: &answer.Resolver{}, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	auth, err := api.NewAuth(tokens)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := orchestrator.OpenSessions(t.Context(), f.bus)
	if err != nil {
		t.Fatal(err)
	}
	auth.UseSessionStore(sessions)
	h, err := web.New(web.Config{Service: o, Auth: auth, Logger: natstest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// signIn signs in at srv and returns the session cookie.
func signIn(t *testing.T, srv *httptest.Server, secret string) *http.Cookie {
	t.Helper()
	resp := post(t, srv, "/ui/login", url.Values{"token": {secret}}, nil)
	for _, c := range resp.Cookies() {
		if c.Name == "agora_session" && c.Value != "" {
			return c
		}
	}
	t.Fatalf("sign in at %s: %d, no session cookie", srv.URL, resp.StatusCode)
	return nil
}

func post(t *testing.T, srv *httptest.Server, path string, form url.Values, c *http.Cookie) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if c != nil {
		req.AddCookie(c)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// inbox GETs / at srv with cookie c: 200 signed in, 303 to sign-in not.
func inbox(t *testing.T, srv *httptest.Server, c *http.Cookie) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	req.AddCookie(c)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	_, _ = io.Copy(&body, resp.Body)
	return resp.StatusCode, body.String()
}

// TestSignOutEverywhere: signing out ends the session on every replica,
// not only the cookie in this browser (a copied cookie is refused); signing
// out everywhere ends every session of the token; a new sign-in works.
func TestSignOutEverywhere(t *testing.T) {
	t.Parallel()
	tokens := []string{"alice:wonderland:answerer", "bob:b0b"}
	f := &fixture{t: t, bus: bustest.Bus(t)}
	a, b := replica(t, f, tokens...), replica(t, f, tokens...)

	first := signIn(t, a, "wonderland")
	if code, _ := inbox(t, b, first); code != http.StatusOK {
		t.Fatalf("a session made on replica A, on replica B: %d, want 200", code)
	}
	csrf := csrfOf(t, b, first)
	if resp := post(t, b, "/ui/logout", url.Values{"csrf": {csrf}}, first); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out on B: %d, want 303", resp.StatusCode)
	}
	if code, _ := inbox(t, a, first); code != http.StatusSeeOther {
		t.Errorf("the signed-out cookie replayed on replica A: %d, want 303 to sign in", code)
	}

	second, third, bobs := signIn(t, a, "wonderland"), signIn(t, b, "wonderland"), signIn(t, a, "b0b")
	if resp := post(t, a, "/ui/logout", url.Values{"csrf": {csrfOf(t, a, second)}, "everywhere": {"1"}}, second); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out everywhere on A: %d, want 303", resp.StatusCode)
	}
	if code, _ := inbox(t, b, third); code != http.StatusSeeOther {
		t.Errorf("alice's other session after signing out everywhere, on B: %d, want 303 to sign in", code)
	}
	if code, _ := inbox(t, b, bobs); code != http.StatusOK {
		t.Errorf("bob's session after alice signed out everywhere: %d, want 200", code)
	}
	if code, _ := inbox(t, b, signIn(t, b, "wonderland")); code != http.StatusOK {
		t.Errorf("alice signs in again after signing out everywhere: %d, want 200", code)
	}
}

// csrfOf reads the CSRF token from the inbox page of session c.
func csrfOf(t *testing.T, srv *httptest.Server, c *http.Cookie) string {
	t.Helper()
	_, body := inbox(t, srv, c)
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the inbox page: %.300s", body)
	}
	return m[1]
}
