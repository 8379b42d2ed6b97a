package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agoradev/agora/orchestrator"
	"github.com/agoradev/agora/wire"
)

// requestError is an error the API itself finds in a request (bad body,
// bad query, no token) before or instead of asking the service.
type requestError struct {
	status int
	code   wire.Code
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func invalid(msg string) error { return &requestError{http.StatusBadRequest, wire.CodeInvalid, msg} }

// classify gives err's status and code.
func classify(err error) (int, wire.Code) {
	if _, ok := RateLimited(err); ok {
		return http.StatusTooManyRequests, wire.CodeRateLimited
	}
	if re, ok := errors.AsType[*requestError](err); ok {
		return re.status, re.code
	}
	if errors.Is(err, wire.ErrInvalidID) {
		// An id in the path that cannot be one: the request is malformed.
		return http.StatusBadRequest, wire.CodeInvalid
	}
	if errors.Is(err, orchestrator.ErrForbidden) {
		return http.StatusForbidden, wire.CodeUnauthorized
	}
	if code, status, ok := wire.SentinelCode(err); ok {
		return status, code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout, wire.CodeInternal
	}
	return http.StatusInternalServerError, wire.CodeInternal
}
