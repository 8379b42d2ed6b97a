// Package explain is which agora server the CLI calls and how the
// server's errors read: one line that says what to do (start the server,
// pass --token, check --server), the API's message without its sentinel's
// words, and the server's refusal of the input as a usage error (exit 2).
package explain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/agoradev/agora/client"
	"github.com/agoradev/agora/cmd/agora/internal/exitcode"
	"github.com/agoradev/agora/cmd/agora/internal/notapi"
	"github.com/agoradev/agora/cmd/agora/internal/view"
	"github.com/agoradev/agora/wire"
)

// DefaultServer is where the CLI looks for the API without --server or
// $AGORA_SERVER: `agora serve` on this machine.
const DefaultServer = "http://127.0.0.1:7070"

// Server settles the server's URL: flag (--server), else env
// ($AGORA_SERVER), else DefaultServer; http:// when it names no scheme, no
// trailing slash. A URL that is none is a usage error naming where it came
// from.
func Server(flag, env string) (string, error) {
	server, from := flag, "--server"
	if server == "" {
		server, from = env, "AGORA_SERVER"
	}
	given := server
	if server == "" {
		server = DefaultServer
	}
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", exitcode.Usagef("%s %q: want the agora server's URL, e.g. %s", from, given, DefaultServer)
	}
	return strings.TrimRight(server, "/"), nil
}

// Error turns an error of the client calling server with token into one
// line that says what to do; taskID names the task the call was about, if
// any.
func Error(server, token string, err error, taskID string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted")
	}
	if e, ok := errors.AsType[*client.Error](err); ok {
		switch {
		case e.Code == string(wire.CodeNotFound) && taskID != "":
			return fmt.Errorf("no task %s on %s; 'agora status' lists the tasks", taskID, server)
		case e.Code == string(wire.CodeUnauthorized) && strings.Contains(token, ":"):
			// The server is given NAME:SECRET; a client sends the SECRET.
			name, _, _ := strings.Cut(token, ":")
			return fmt.Errorf("the agora server at %s refused the token (%s): a client sends only the SECRET of the server's --token NAME:SECRET, so if %q is the token's name, drop it", server, e.Message, name+":")
		case e.Code == string(wire.CodeUnauthorized):
			return fmt.Errorf("the agora server at %s refused the request (%s); pass --token or set AGORA_TOKEN", server, e.Message)
		case e.Code == string(wire.CodeNoRoute) || e.Code == "":
			return fmt.Errorf("%s does not answer like an agora server (%s); check --server or AGORA_SERVER", server, view.Clip(e.Message, 120))
		case e.Code == string(wire.CodeInvalid) || e.Code == string(wire.CodeInvalidAnswer):
			// The server refused the input and changed nothing: the same
			// exit code as a mistake the CLI finds itself.
			return exitcode.UsageError{Msg: PlainMessage(e)}
		}
		return errors.New(PlainMessage(e))
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return fmt.Errorf("cannot reach the agora server at %s (is `agora serve` running?)", server)
	}
	if msg, ok := notapi.Explain(server, strings.TrimPrefix(DefaultServer, "http://"), err); ok {
		return errors.New(msg)
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("lost the agora server at %s: %v", server, ue.Err)
	}
	return err
}

// Registry is Error for the registry verbs, with the registry's not-found
// in its own words.
func Registry(server, token string, err error) error {
	if e, ok := errors.AsType[*client.Error](err); ok && e.Code == string(wire.CodeNotFound) {
		return errors.New(e.Message)
	}
	return Error(server, token, err, "")
}

// Cancel is Error for a cancel bounded by its own timeout (dispatch
// --wait's after a signal).
func Cancel(server, token string, err error, taskID string, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s within %s", server, timeout)
	}
	return Error(server, token, err, taskID)
}

// PlainMessage is the API's message without the sentinel's own words,
// which repeat what the message says: "task t-1 is finished already: not
// possible in the task's state" reads "task t-1 is finished already".
func PlainMessage(e *client.Error) string {
	msg := e.Message
	if s := wire.Code(e.Code).Sentinel(); s != nil {
		switch {
		case errors.Is(s, wire.ErrInvalidAnswer), errors.Is(s, wire.ErrInvalidRequest):
			msg = strings.Replace(msg, s.Error()+": ", "", 1)
			msg = strings.TrimSuffix(msg, ": "+s.Error())
		case errors.Is(s, wire.ErrWrongState):
			msg = strings.TrimSuffix(msg, ": "+s.Error())
		}
	}
	return msg
}

// LoopbackURL is the URL this machine reaches a listener on ADDR at: an
// unspecified host (0.0.0.0, ::, none) is asked on loopback.
func LoopbackURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	switch ip := net.ParseIP(host); {
	case host == "" || (ip != nil && ip.IsUnspecified() && ip.To4() != nil):
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// UnknownField says whether err is the server refusing a request body for
// an unknown field name, as a server older than the field does.
func UnknownField(err error, name string) bool {
	e, ok := errors.AsType[*client.Error](err)
	return ok && e.Code == string(wire.CodeInvalid) && strings.Contains(e.Message, `unknown field "`+name+`"`)
}

// Op is Error plus, for an operation the task's state does not
// allow, the command that fits its state.
func Op(ctx context.Context, c *client.Client, server, token string, err error, taskID string) error {
	line := Error(server, token, err, taskID)
	if !errors.Is(err, wire.ErrWrongState) {
		return line
	}
	t, gerr := c.Get(ctx, taskID)
	if gerr != nil {
		return line
	}
	if next := view.NextAction(t); next != "" {
		return fmt.Errorf("%v; what fits now: %s", line, next)
	}
	return line
}
