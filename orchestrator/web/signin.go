package web

// Sign-in bounds: what an unauthenticated client can make the server do.
// Failed attempts per client are limited by api.Auth, for sign-ins and
// bearer tokens alike.
const (
	// maxSignInBytes caps a sign-in form (a token and the page to go
	// back to); the form parser would otherwise read 10 MB.
	maxSignInBytes = 8 << 10
	// maxSignInsAtOnce bounds sign-ins handled at the same time, from
	// everyone: past it a sign-in is refused at once (503).
	maxSignInsAtOnce = 16
)

// signInGuard bounds the sign-ins handled at once.
type signInGuard struct{ slots chan struct{} }

func newSignInGuard() *signInGuard {
	return &signInGuard{slots: make(chan struct{}, maxSignInsAtOnce)}
}

// enter takes a slot for one sign-in; false when all are taken.
func (g *signInGuard) enter() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (g *signInGuard) leave() { <-g.slots }
