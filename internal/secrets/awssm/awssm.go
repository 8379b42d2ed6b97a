// Package awssm resolves aws-sm:SECRET_ID[#KEY] secret refs with AWS
// Secrets Manager's GetSecretValue (aws-sdk-go-v2), and a secret's name to
// its full ARN with DescribeSecret (for ECS, which takes only ARNs). The worker uses it when
// it runs on its own (a CI job's container); the runner uses it to resolve a
// dispatch's aws-sm refs on its host, so AWS credentials never enter a
// dispatch container. It is the only importer of the Secrets Manager SDK.
package awssm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/agoradev/agora/internal/secrets"
)

// DefaultTimeout bounds one AWS Secrets Manager lookup, retries
// included, so a dead endpoint cannot hang the worker.
const DefaultTimeout = 30 * time.Second

// Options configure Resolver.
type Options struct {
	// Environ is the worker's environment. The standard AWS variables in it
	// apply: AWS_REGION (or AWS_DEFAULT_REGION), AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
	// AWS_ENDPOINT_URL_SECRETS_MANAGER (else AWS_ENDPOINT_URL). Without keys
	// the SDK's default credential chain is used (web identity, ECS task
	// role, instance profile, shared files).
	Environ []string
	// Timeout bounds each lookup; default DefaultTimeout.
	Timeout time.Duration
	// Logger receives the SDK's warnings; nil discards them.
	Logger *slog.Logger
}

// Resolver resolves aws-sm:SECRET_ID and aws-sm:SECRET_ID#KEY
// refs with GetSecretValue. SECRET_ID is a secret's name or ARN; #KEY picks
// one field of a JSON SecretString. Its client is made on the first aws-sm
// ref, once; each secret is fetched once per worker run however many refs
// name it.
type Resolver struct {
	opts Options

	mu       sync.Mutex
	client   *secretsmanager.Client
	endpoint string // "" for AWS itself
	region   string
	created  int // how many clients were made; tests hold it at one
	cache    map[string]awsSecret
	arns     map[string]string // secret id → its full ARN
}

// awsSecret is one fetched secret version.
type awsSecret struct {
	str    *string
	binary []byte
}

// New returns a resolver that does nothing until the first
// aws-sm ref: no client, no configuration loaded, no connection.
func New(opts Options) *Resolver {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Resolver{opts: opts, cache: map[string]awsSecret{}, arns: map[string]string{}}
}

// Resolve resolves an aws-sm: ref. Errors name the
// secret id and what failed, never a value.
func (a *Resolver) Resolve(ctx context.Context, ref string) (string, error) {
	scheme, rest, _ := secrets.SplitRef(ref)
	if scheme != secrets.SchemeAWSSM {
		return "", fmt.Errorf("secret ref %q is not an aws-sm: ref", ref)
	}
	id, key, hasKey := strings.Cut(rest, "#")
	switch {
	case id == "":
		return "", errors.New("aws-sm ref without a secret id (want aws-sm:SECRET_ID or aws-sm:SECRET_ID#JSON_KEY)")
	case hasKey && key == "":
		return "", fmt.Errorf("aws-sm ref for %s has an empty JSON key after '#'", id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sec, ok := a.cache[id]
	if !ok {
		var err error
		if sec, err = a.fetch(ctx, id); err != nil {
			return "", err
		}
		a.cache[id] = sec
	}
	if !hasKey {
		if sec.str != nil {
			return *sec.str, nil
		}
		return string(sec.binary), nil
	}
	if sec.str == nil {
		return "", fmt.Errorf("AWS Secrets Manager secret %s holds SecretBinary, so #%s cannot pick a JSON field", id, key)
	}
	return jsonField(id, key, *sec.str)
}

// ARN is the full ARN of the secret id names (a name or an ARN), read
// once with DescribeSecret (which reads no value); a full ARN is returned
// as it is, without a call. ECS takes a Secrets Manager secret in a task
// definition's secrets only by its full ARN: a bare name there is an SSM
// parameter's.
func (a *Resolver) ARN(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", errors.New("aws-sm ref without a secret id (want aws-sm:SECRET_ID or aws-sm:SECRET_ID#JSON_KEY)")
	}
	if IsFullARN(id) {
		return id, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if arn, ok := a.arns[id]; ok {
		return arn, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	if a.client == nil {
		if err := a.newClient(ctx); err != nil {
			return "", err
		}
	}
	if a.region == "" {
		return "", fmt.Errorf("AWS Secrets Manager secret %s: no AWS region: set AWS_REGION, or use the secret's full ARN", id)
	}
	region := a.region
	var optFns []func(*secretsmanager.Options)
	if r := arnRegion(id); r != "" {
		region = r // a partial ARN names its region
		optFns = append(optFns, func(o *secretsmanager.Options) { o.Region = r })
	}
	out, err := a.client.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(id)}, optFns...)
	if err != nil {
		return "", a.describeErr(ctx, "DescribeSecret", id, region, err)
	}
	arn := aws.ToString(out.ARN)
	if !IsFullARN(arn) {
		return "", fmt.Errorf("AWS Secrets Manager: DescribeSecret of %s answered no full ARN (%q)", id, arn)
	}
	a.arns[id] = arn
	return arn, nil
}

// IsFullARN reports whether id is a Secrets Manager secret's full ARN,
// arn:PARTITION:secretsmanager:REGION:ACCOUNT:secret:NAME-XXXXXX (with the
// six characters Secrets Manager appends to the name).
func IsFullARN(id string) bool {
	parts := strings.SplitN(id, ":", 7)
	if len(parts) != 7 || parts[0] != "arn" || parts[2] != "secretsmanager" || parts[3] == "" || parts[4] == "" || parts[5] != "secret" {
		return false
	}
	name := parts[6]
	i := strings.LastIndex(name, "-")
	return i > 0 && len(name)-i-1 == 6 && !strings.Contains(name, ":")
}

// jsonField picks key from the JSON object s: a string as it is, a number
// or boolean as its JSON text.
func jsonField(id, key, s string) (string, error) {
	var fields map[string]json.RawMessage
	// The decode error is not wrapped: it could quote part of the value.
	if err := json.Unmarshal([]byte(s), &fields); err != nil || fields == nil {
		return "", fmt.Errorf("AWS Secrets Manager secret %s: its SecretString is not a JSON object, so #%s cannot pick a field", id, key)
	}
	raw, ok := fields[key]
	if !ok {
		return "", fmt.Errorf("AWS Secrets Manager secret %s: its JSON object has no key %q", id, key)
	}
	var str string
	if string(raw) != "null" && json.Unmarshal(raw, &str) == nil {
		return str, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err == nil {
		switch v.(type) {
		case float64, bool:
			return string(raw), nil
		}
	}
	return "", fmt.Errorf("AWS Secrets Manager secret %s: key %q holds an object, array or null, not a string, number or boolean", id, key)
}

// fetch calls GetSecretValue for id within the timeout. a.mu is held.
func (a *Resolver) fetch(ctx context.Context, id string) (awsSecret, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	if a.client == nil {
		if err := a.newClient(ctx); err != nil {
			return awsSecret{}, err
		}
	}
	var optFns []func(*secretsmanager.Options)
	region := a.region
	if r := arnRegion(id); r != "" {
		// A full ARN names its region: look it up there.
		region = r
		optFns = append(optFns, func(o *secretsmanager.Options) { o.Region = r })
	}
	if region == "" {
		return awsSecret{}, fmt.Errorf("AWS Secrets Manager secret %s: no AWS region: set AWS_REGION, or use the secret's full ARN", id)
	}
	out, err := a.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)}, optFns...)
	if err != nil {
		return awsSecret{}, a.describeErr(ctx, "GetSecretValue", id, region, err)
	}
	if out.SecretString == nil && out.SecretBinary == nil {
		return awsSecret{}, fmt.Errorf("AWS Secrets Manager secret %s has neither SecretString nor SecretBinary", id)
	}
	if out.SecretString != nil && len(*out.SecretString) > secrets.MaxValueBytes ||
		len(out.SecretBinary) > secrets.MaxValueBytes {
		return awsSecret{}, fmt.Errorf("AWS Secrets Manager secret %s is larger than %d bytes", id, secrets.MaxValueBytes)
	}
	return awsSecret{str: out.SecretString, binary: out.SecretBinary}, nil
}

// describeErr turns an error of op into one line that says where it went
// wrong.
func (a *Resolver) describeErr(ctx context.Context, op, id, region string, err error) error {
	where := "region " + region
	if a.endpoint != "" {
		where = a.endpoint
	}
	var notFound *types.ResourceNotFoundException
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("AWS Secrets Manager (%s) has no secret %s (%s: %s)", where, id, notFound.ErrorCode(), notFound.ErrorMessage())
	case errors.As(err, &apiErr):
		return fmt.Errorf("AWS Secrets Manager (%s) refused %s of %s: %s: %s", where, op, id, apiErr.ErrorCode(), apiErr.ErrorMessage())
	case ctx.Err() != nil:
		return fmt.Errorf("AWS Secrets Manager (%s) did not answer for %s within %s : %w", where, id, a.opts.Timeout, err)
	}
	return fmt.Errorf("AWS Secrets Manager (%s): %s of %s: %w", where, op, id, err)
}

// newClient loads the AWS configuration from the worker's environment and
// makes the one client. a.mu is held.
func (a *Resolver) newClient(ctx context.Context) error {
	env := map[string]string{}
	for _, kv := range a.opts.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "AWS_") {
			env[k] = v
		}
	}
	log := a.opts.Logger
	loadOpts := []func(*config.LoadOptions) error{
		config.WithLogger(logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			level := slog.LevelDebug
			if c == logging.Warn {
				level = slog.LevelWarn
			}
			log.Log(context.Background(), level, "aws sdk: "+fmt.Sprintf(format, v...))
		})),
		// No keep-alive: a worker looks up a handful of secrets once, and
		// no idle connection (or its goroutines) outlives the lookup.
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.DisableKeepAlives = true
		})),
	}
	if r := firstNonEmpty(env["AWS_REGION"], env["AWS_DEFAULT_REGION"]); r != "" {
		loadOpts = append(loadOpts, config.WithRegion(r))
	}
	if env["AWS_ACCESS_KEY_ID"] != "" && env["AWS_SECRET_ACCESS_KEY"] != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(
			env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"])))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return fmt.Errorf("AWS Secrets Manager: load the AWS configuration: %w", err)
	}
	a.endpoint = firstNonEmpty(env["AWS_ENDPOINT_URL_SECRETS_MANAGER"], env["AWS_ENDPOINT_URL"])
	a.region = cfg.Region
	if a.region == "" && a.endpoint != "" {
		a.region = "us-east-1" // only signs requests to a custom endpoint
	}
	a.client = secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		o.Region = a.region
		if a.endpoint != "" {
			o.BaseEndpoint = aws.String(a.endpoint)
		}
	})
	a.created++
	log.Debug("AWS Secrets Manager client made", "region", a.region, "endpoint", a.endpoint)
	return nil
}

// arnRegion is the region of a Secrets Manager ARN
// (arn:PARTITION:secretsmanager:REGION:ACCOUNT:secret:NAME), "" otherwise.
func arnRegion(id string) string {
	parts := strings.SplitN(id, ":", 7)
	if len(parts) == 7 && parts[0] == "arn" && parts[2] == "secretsmanager" {
		return parts[3]
	}
	return ""
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
