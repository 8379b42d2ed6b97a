// Package compute is the container seam: the few verbs the runner needs to run
// one ephemeral container per dispatch (create, start, wait, logs, stop,
// remove, list by label), the spec of such a container and how it ended.
//
// The Docker implementation lives in compute/docker, the only package of this
// module that imports the Docker SDK; the AWS ECS one (Fargate or EC2 tasks,
// output from CloudWatch Logs) in compute/ecs, tested against its loopback
// fake compute/ecs/ecsfake. Image work (building the worker image)
// is an optional capability, ImageBuilder, found by type assertion.
//
// What it may import: docs/architecture.md.
package compute

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"time"

	"github.com/agoradev/agora/internal/exit"
)

// Labels every agora container carries. The runner sets the dispatch, task and
// round labels; the engine passes labels through unchanged and adds
// LabelManaged itself, so List never sees a container that agora did not create.
const (
	// LabelManaged marks a container created by agora; its value is always "true".
	LabelManaged = "agora.managed"
	// LabelDispatchID holds the dispatch id the container runs.
	LabelDispatchID = "agora.dispatch_id"
	// LabelTaskID holds the task the dispatch belongs to, when it has one.
	LabelTaskID = "agora.task_id"
	// LabelRound holds the round of the task, as a decimal number.
	LabelRound = "agora.round"
)

// Network modes a container can run in. A sub-agent's own network policy
// picks one; the empty mode means NetworkNone.
const (
	// NetworkNone gives the container a loopback interface only.
	NetworkNone = "none"
	// NetworkBridge attaches the container to the engine's default bridge.
	NetworkBridge = "bridge"
	// NetworkHost shares the host's network namespace, loopback included.
	NetworkHost = "host"
)

// Errors callers branch on. They are returned wrapped; use errors.Is.
var (
	// ErrNotFound: the container does not exist (Start, Wait, Logs, Stop).
	ErrNotFound = errors.New("container not found")
	// ErrImageNotFound: Create named an image the engine does not have. Nothing
	// is pulled: build it first.
	ErrImageNotFound = errors.New("image not found")
	// ErrAlreadyExists: Create named a container that already exists.
	ErrAlreadyExists = errors.New("container already exists")
	// ErrInvalidSpec: the ContainerSpec failed Validate.
	ErrInvalidSpec = errors.New("invalid container spec")
)

// Engine runs containers. Every method is safe for concurrent use.
//
// Short calls (Create, Start, Stop, Remove, List) are bounded by the
// implementation's call timeout; Wait and a following Logs are bounded only by
// the caller's context.
type Engine interface {
	// Create creates (does not start) a container and returns its id. The spec
	// is validated first (ErrInvalidSpec); hardening is applied regardless of it.
	Create(ctx context.Context, spec ContainerSpec) (id string, err error)
	// Start starts a created container. Starting a running one is not an error.
	Start(ctx context.Context, id string) error
	// Wait blocks until the container is not running and reports how it ended.
	// A created container that was never started is not running: start first.
	Wait(ctx context.Context, id string) (exit.Result, error)
	// Logs copies the container's output, demultiplexed, to stdout and stderr
	// (either may be nil to discard it). With follow it returns once the
	// container has stopped and its output is drained, or when ctx ends.
	Logs(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) error
	// Stop sends SIGTERM (or the spec's StopSignal), then SIGKILL once grace
	// has passed; grace is rounded up to whole seconds. A grace of zero or
	// less sends SIGKILL alone, at once. Stopping a container that is not
	// running is not an error.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove removes the container, killing it if it runs, with its anonymous
	// volumes. Removing a missing container is not an error.
	Remove(ctx context.Context, id string) error
	// List returns the agora containers (LabelManaged) in every state that
	// carry all of labels, oldest first.
	List(ctx context.Context, labels map[string]string) ([]Container, error)
}

// Container is one container as List sees it.
type Container struct {
	ID     string
	Name   string
	Labels map[string]string
	// State is the engine's state: "created", "running", "paused",
	// "restarting", "removing", "exited" or "dead".
	State string
	// ExitCode is meaningful when State is "exited".
	ExitCode int
	Created  time.Time
}

// Running reports whether the container's process may still be running.
func (c Container) Running() bool {
	switch c.State {
	case "running", "paused", "restarting":
		return true
	}
	return false
}

// Mount is a bind mount of a host path into the container. The host path must
// exist.
type Mount struct {
	Source   string
	Target   string
	ReadOnly bool
}

// Resources bound what a container may use. Zero means unlimited.
type Resources struct {
	// NanoCPUs is CPU quota in units of 1e-9 CPUs (1.5 CPUs = 1_500_000_000).
	NanoCPUs int64
	// MemoryBytes is the memory limit; swap is not allowed on top of it.
	MemoryBytes int64
	// PidsLimit is the maximum number of processes and threads.
	PidsLimit int64
}

// ContainerSpec is everything Create needs. It is a plain value: the runner
// compiles a dispatch request into one (pure), then hands it to an Engine.
//
// The hardening is not in the spec because it is not optional: every
// container runs with no-new-privileges, all capabilities dropped, the
// non-root User, a read-only root filesystem (unless WritableRootfs) and a
// tmpfs at /tmp.
type ContainerSpec struct {
	// Name is the container's name; empty lets the engine choose one.
	Name  string
	Image string
	// Entrypoint and Cmd override the image's; nil keeps the image's.
	Entrypoint []string
	Cmd        []string
	// Env is KEY=value lines. Keep it to what the worker needs: large payloads
	// travel in a mounted file or through storage.
	Env []string
	// Labels are passed through; LabelManaged is added.
	Labels map[string]string
	// User is "uid", "uid:gid", "name" or "name:group"; required, never root.
	User       string
	WorkingDir string
	Mounts     []Mount
	// ScratchDirs each get a fresh writable volume of the container's own
	// storage, holding what the image has there and removed with the
	// container: a workspace for a container without host mounts.
	ScratchDirs []string
	// NetworkMode is NetworkNone (the default), NetworkBridge or NetworkHost.
	NetworkMode string
	// Network, instead of NetworkMode, joins the container to a
	// user-defined network by name (one Networker.CreateNetwork made, or
	// the operator's); NetworkAliases are its names there.
	Network        string
	NetworkAliases []string
	// DNS replaces the resolvers the engine gives the container.
	DNS []string
	// ExtraHosts are "host:ip" lines added to /etc/hosts, e.g.
	// "host.docker.internal:host-gateway".
	ExtraHosts []string
	Resources  Resources
	// Init runs a tiny init (docker-init) as PID 1 that forwards signals and
	// reaps zombies; the entrypoint runs as its child.
	Init bool
	// StopSignal replaces SIGTERM as the first signal of Stop, e.g. "SIGINT".
	StopSignal string
	// StopTimeout is the grace the engine uses when the container is stopped
	// by someone other than Stop (e.g. the daemon shutting down); zero keeps
	// the engine's default (10s).
	StopTimeout time.Duration
	// WritableRootfs opts out of the read-only root filesystem, for runtimes
	// that write outside /tmp and the mounts (e.g. a tool's cache in $HOME).
	WritableRootfs bool
	// TmpfsBytes bounds the /tmp tmpfs; zero means 64 MiB. Its pages count
	// against MemoryBytes.
	TmpfsBytes int64
	// Secrets are environment variables the platform resolves from its
	// own secret store when the container starts, so their values never
	// pass through the caller or the create request. Only an engine with a
	// secret store takes them: ECS puts them in the task definition's
	// secrets (Secrets Manager, read with the execution role); Docker has
	// none and refuses a spec with Secrets (the runner gives Docker
	// containers their secrets as files).
	Secrets []SecretRef
}

// SecretRef is one environment variable whose value the platform's secret
// store holds.
type SecretRef struct {
	// Name is the environment variable.
	Name string
	// ValueFrom names the value in the store: for ECS a Secrets Manager
	// secret's name or ARN, or ECS's "ARN:json-key:version-stage:version-id"
	// form (e.g. "arn:aws:secretsmanager:…:secret:prod/db-AbCdEf:password::")
	// for one key of a JSON secret.
	ValueFrom string
}

// ImageBuilder is the optional capability of building and inspecting images
// locally, without a registry. Find it by type assertion on an Engine.
type ImageBuilder interface {
	// BuildImage builds the Dockerfile at the root of contextTar (an
	// uncompressed tar) and tags the result. Nothing is pulled: a FROM must
	// name scratch or a local image. labels are added to the image.
	BuildImage(ctx context.Context, contextTar io.Reader, tag string, labels map[string]string) error
	// ImageExists inspects a local image by name or id. A missing image gives
	// ok == false and no error.
	ImageExists(ctx context.Context, ref string) (info ImageInfo, ok bool, err error)
}

// ImageRemover is the optional capability of removing local images.
type ImageRemover interface {
	// RemoveImage untags ref and removes the image when no other tag or
	// container uses it. Removing a missing image is not an error.
	RemoveImage(ctx context.Context, ref string) error
}

// HostGateway is the optional capability of naming the host's address on the
// engine's default bridge: where a NetworkBridge container reaches a service
// of the host (listening on that address, not only on loopback). Containers
// can name it "host.docker.internal" with the ExtraHosts line
// HostGatewayExtraHost.
type HostGateway interface {
	BridgeGateway(ctx context.Context) (netip.Addr, error)
}

// Networker is the optional capability of making networks: the runner
// puts a sub-agent with an egress allow-list on an internal network of its
// own, whose only other member is its proxy. Find it by type assertion.
type Networker interface {
	// CreateNetwork creates a network and returns its id; a name taken
	// is ErrAlreadyExists (the caller finds it with ListNetworks).
	CreateNetwork(ctx context.Context, spec NetworkSpec) (id string, err error)
	// ConnectNetwork joins a container, created or running, to a network
	// (by name or id) as well, under aliases there.
	ConnectNetwork(ctx context.Context, network, containerID string, aliases []string) error
	// RemoveNetwork removes a network; a missing one is not an error.
	RemoveNetwork(ctx context.Context, id string) error
	// ListNetworks returns the agora networks (LabelManaged) carrying all
	// of labels.
	ListNetworks(ctx context.Context, labels map[string]string) ([]Network, error)
}

// NetworkSpec is a network to create.
type NetworkSpec struct {
	Name string
	// Internal: the network has no route out, and the host has no
	// address on it, so its members reach one another and nothing else
	// (not the host's services, not the outside).
	Internal bool
	// Labels are passed through; LabelManaged is added.
	Labels map[string]string
}

// Network is one network as ListNetworks sees it.
type Network struct {
	ID     string
	Name   string
	Labels map[string]string
}

// HostGatewayExtraHost makes host.docker.internal resolve, in a bridged
// container, to the host's address on the bridge (Docker 20.10 and later).
const HostGatewayExtraHost = "host.docker.internal:host-gateway"

// ImageInfo describes a local image.
type ImageInfo struct {
	ID     string
	Labels map[string]string
}
