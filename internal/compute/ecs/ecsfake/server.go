// Package ecsfake is a loopback AWS ECS endpoint of our own, for tests and
// demos: it speaks the ECS JSON 1.1 protocol (X-Amz-Target:
// AmazonEC2ContainerServiceV20141113.*) for the calls agora makes, plus
// CloudWatch Logs' GetLogEvents (Logs_20140328.GetLogEvents), checks each
// request's SigV4 signature against its static credentials, records every
// call, and actually runs each task's container on a compute.Engine (the
// local Docker engine), storing the container's output as log events.
//
// It exists because no maintained ECS emulator runs containers (the free
// ones accept RunTask and run nothing). It is a fake: it implements only
// what agora uses, with ECS's documented behaviour where agora depends on
// it — clientToken idempotency, failures[], the task lifecycle
// (PROVISIONING → PENDING → RUNNING → STOPPED, with a configurable
// provisioning delay), stopTimeout between SIGTERM and SIGKILL, the 8 KiB
// overrides limit, tags, startedBy, a definition's secrets read when the
// task starts (Config.ResolveSecret), the task role's credentials endpoint
// (Config.TaskRoleCredentials, on loopback) — and nothing else (no
// services, no placement, no IAM policies, no image registry: images are
// local). Every request is checked first against AWS's published service
// models (model/*.json, trimmed from botocore; model.go) and the rules ECS's
// documentation states (rules.go), and refused as ECS refuses it.
//
// A test helper: what it may import, docs/architecture.md.
package ecsfake

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/agoradev/agora/internal/compute"
)

// Target prefixes of the two protocols.
const (
	ECSPrefix  = "AmazonEC2ContainerServiceV20141113."
	LogsPrefix = "Logs_20140328."
)

// LabelFake labels every Docker container the fake runs with its server id.
const LabelFake = "agora.ecsfake"

// Config configures a Server.
type Config struct {
	// Engine runs the tasks' containers. Required.
	Engine compute.Engine
	// AccessKeyID and SecretAccessKey are the only credentials accepted.
	AccessKeyID     string
	SecretAccessKey string
	// Region is the region in ARNs and signatures; default us-east-1.
	Region string
	// ProvisionDelay keeps every task PROVISIONING that long before its
	// container is created (Fargate's cold start, shortened).
	ProvisionDelay time.Duration
	// NoEgressSecurityGroups stand for security groups without egress
	// rules: an awsvpc task all of whose groups are in it runs with no
	// network (Docker's none); other awsvpc tasks run on the host's
	// network, so their loopback reaches the fake's credentials endpoint
	// and the test's loopback services, as an awsvpc task reaches its VPC
	// endpoints.
	NoEgressSecurityGroups []string
	// ResolveSecret reads a secret of a task definition's secrets when a
	// task starts, as ECS does with the execution role: secretID is the
	// valueFrom, a Secrets Manager secret's full ARN (anything else is an
	// SSM parameter to ECS, and stops the task), without the
	// json-key, version-stage and version-id parts of ECS's
	// "ARN:json-key:version-stage:version-id" form (the fake picks the
	// key from the JSON value itself; it models no version parts). The
	// values join the container's environment under their names. Nil
	// stops a task with secrets before it runs (ResourceInitializationError),
	// as does an error from ResolveSecret; a definition with secrets and no
	// execution role is refused at registration, as ECS refuses it.
	ResolveSecret func(ctx context.Context, secretID string) (string, error)
	// TaskRoleCredentials, when it has keys, are the credentials of every
	// task role: a task whose definition or overrides name a taskRoleArn
	// gets AWS_CONTAINER_CREDENTIALS_FULL_URI (this server's loopback
	// address, CredentialsPath + an id of the task's) and
	// AWS_CONTAINER_AUTHORIZATION_TOKEN (a token of the task's), which the
	// SDKs' container credentials provider reads, while the task has not
	// stopped. Expires, when zero, is an hour after each fetch. A task on
	// Docker's none network (all groups without egress) cannot reach the
	// endpoint, unlike on Fargate.
	TaskRoleCredentials aws.Credentials
	// InvisibleFor hides a task from DescribeTasks (MISSING) and ListTasks
	// for that long after RunTask, as ECS's eventual consistency may.
	InvisibleFor time.Duration
	// RunTaskFailures makes the first n RunTask calls answer with a
	// capacity failure in failures[] and no task.
	RunTaskFailures int
	// LoseRunTaskResponses makes the first n RunTask calls that launch a
	// task answer 500 afterwards, as if the response were lost: the SDK
	// retries with the same clientToken.
	LoseRunTaskResponses int
	Logger               *slog.Logger
}

// Call is one request the fake received.
type Call struct {
	Target string // e.g. "RunTask", "GetLogEvents"
	Body   []byte
	Time   time.Time
}

// Server is the fake endpoint. Start it with Start, end it with Close.
type Server struct {
	cfg  Config
	id   string
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu        sync.Mutex
	calls     []Call
	defs      map[string][]*taskDef // family → revisions (index = revision-1)
	tasks     map[string]*task      // arn → task
	order     []string              // task arns, oldest first
	tokens    map[string]string     // clientToken → arn
	streams   map[string]*logStream // group + "\x00" + stream
	creds     map[string]*task      // credentials id → task
	resolved  []string              // valueFrom of every secret read
	runFails  int
	loseResps int
	wg        sync.WaitGroup
	closed    bool
}

// Start listens on 127.0.0.1 (a random port) and serves until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.Engine == nil {
		return nil, errors.New("ecsfake: an engine is required")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("ecsfake: listen: %w", err)
	}
	s := &Server{
		cfg: cfg, ln: ln, done: make(chan struct{}),
		id:   fmt.Sprintf("%d", time.Now().UnixNano()),
		defs: map[string][]*taskDef{}, tasks: map[string]*task{}, tokens: map[string]string{}, streams: map[string]*logStream{}, creds: map[string]*task{},
		runFails: cfg.RunTaskFailures, loseResps: cfg.LoseRunTaskResponses,
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("ecsfake serve", "error", err)
		}
	}()
	return s, nil
}

// URL is the endpoint to give the SDK clients as BaseEndpoint.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// ID labels (LabelFake) the Docker containers of this server.
func (s *Server) ID() string { return s.id }

// Close stops serving, kills every task still running, removes their
// containers and waits for them.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, t := range s.tasks {
		t.kill()
	}
	s.mu.Unlock()
	err := s.srv.Shutdown(ctx)
	<-s.done
	waited := make(chan struct{})
	go func() { s.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("ecsfake: tasks still running: %w", ctx.Err()))
	}
	left, lerr := s.cfg.Engine.List(ctx, map[string]string{LabelFake: s.id})
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	for _, c := range left {
		err = errors.Join(err, fmt.Errorf("ecsfake: container %s left", c.ID), s.cfg.Engine.Remove(ctx, c.ID))
	}
	return err
}

// Calls returns the calls received, oldest first; with a target, only
// those calls.
func (s *Server) Calls(target string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if target == "" || c.Target == target {
			out = append(out, c)
		}
	}
	return out
}

// apiError is an error in the JSON protocols' shape.
type apiError struct {
	status int
	typ    string
	msg    string
}

func (e *apiError) Error() string { return e.typ + ": " + e.msg }

func clientErr(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "ClientException", fmt.Sprintf(format, args...)}
}

func invalidParam(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf(format, args...)}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, CredentialsPath) {
		s.serveCredentials(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeErr(w, &apiError{http.StatusBadRequest, "SerializationException", err.Error()})
		return
	}
	target := r.Header.Get("X-Amz-Target")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json-1.1") {
		writeErr(w, &apiError{http.StatusBadRequest, "SerializationException", "want POST application/x-amz-json-1.1"})
		return
	}
	service, op := "", ""
	switch {
	case strings.HasPrefix(target, ECSPrefix):
		service, op = "ecs", strings.TrimPrefix(target, ECSPrefix)
	case strings.HasPrefix(target, LogsPrefix):
		service, op = "logs", strings.TrimPrefix(target, LogsPrefix)
	default:
		writeErr(w, &apiError{http.StatusBadRequest, "UnknownOperationException", "unknown target " + target})
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Target: op, Body: body, Time: time.Now()})
	s.mu.Unlock()
	if err := s.verify(r, body, service); err != nil {
		s.cfg.Logger.Warn("ecsfake: signature refused", "target", op, "error", err)
		writeErr(w, &apiError{http.StatusForbidden, "InvalidSignatureException", err.Error()})
		return
	}
	if aerr := checkModel(service, op, body); aerr != nil {
		s.cfg.Logger.Debug("ecsfake: refused by the service model", "target", op, "error", aerr)
		writeErr(w, aerr)
		return
	}
	var out any
	var aerr *apiError
	if service == "ecs" {
		out, aerr = s.ecs(op, body)
	} else {
		out, aerr = s.logs(op, body)
	}
	if aerr != nil {
		s.cfg.Logger.Debug("ecsfake: error", "target", op, "error", aerr)
		writeErr(w, aerr)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeErr(w, &apiError{http.StatusInternalServerError, "ServerException", err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_, _ = w.Write(b)
}

func writeErr(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", e.typ)
	w.WriteHeader(e.status)
	b, _ := json.Marshal(map[string]string{"__type": e.typ, "message": e.msg})
	_, _ = w.Write(b)
}

var authRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$`)

// verify recomputes the request's SigV4 signature with the configured
// secret, over the headers the client signed.
func (s *Server) verify(r *http.Request, body []byte, service string) error {
	m := authRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return errors.New("no SigV4 Authorization header")
	}
	akid, region, svc, signed := m[1], m[3], m[4], strings.Split(m[5], ";")
	if akid != s.cfg.AccessKeyID {
		return fmt.Errorf("unknown access key %s", akid)
	}
	if region != s.cfg.Region || svc != service {
		return fmt.Errorf("credential scope %s/%s, want %s/%s", region, svc, s.cfg.Region, service)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	if d := time.Since(at); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("request time %s is off by %s", at, d)
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	re, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	re.Host = r.Host
	re.Header = http.Header{}
	for _, h := range signed {
		switch h {
		case "host":
		case "content-length":
			re.ContentLength = int64(len(body))
		default:
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != payload {
		return errors.New("payload hash mismatch")
	}
	creds := aws.Credentials{AccessKeyID: s.cfg.AccessKeyID, SecretAccessKey: s.cfg.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, re, payload, service, region, at); err != nil {
		return err
	}
	if got := authRE.FindStringSubmatch(re.Header.Get("Authorization")); got == nil || got[6] != m[6] {
		return errors.New("signature does not match")
	}
	return nil
}
