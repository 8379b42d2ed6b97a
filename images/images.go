// Package images builds the agora worker image without a registry: the
// locally compiled static worker, layered FROM scratch (with Debian's static
// busybox as /bin/sh when the host has it) or onto a user's own image, sent as
// a build context generated in Go to the engine's builder. Nothing is pulled
// and no docker CLI is needed.
//
// The image name carries a version: a content hash of every input (the
// worker binary, busybox, the CA certificates, the Dockerfile, the base
// image's id). The same hash is stored in the LabelInputs label, so a build
// whose inputs have not changed is skipped.
//
// worker.Dockerfile in this directory is the same image as an ordinary
// multi-stage Dockerfile, for users who have a registry; a test keeps the two
// in step.
//
// What it may import: docs/architecture.md.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agoradev/agora/internal/compute"
)

// What every worker image built here has.
const (
	// WorkerPath is where the worker binary lives; it is the ENTRYPOINT.
	WorkerPath = "/usr/local/bin/agora-worker"
	// UID and GID are the non-root "agora" user and group of the scratch image.
	UID = 65532
	GID = 65532
	// User is the scratch image's USER, and the user the runner should give
	// compute.ContainerSpec.User for it.
	User = "65532:65532"
	// Workspace is the working directory, owned by User in the scratch image.
	Workspace = "/workspace"
	// Repository is the image name used when Options.Tag is empty.
	Repository = "agora-worker"
	// LabelInputs holds the content hash of the build's inputs.
	LabelInputs = "agora.image.inputs"
	// DefaultBusybox is where Debian's busybox-static installs busybox.
	DefaultBusybox = "/bin/busybox"
	// DefaultCACerts is the host's CA bundle on Debian and its derivatives.
	DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"
)

// Options configure Build. WorkerBinary is required.
type Options struct {
	// WorkerBinary is the path of a static agora-worker (CGO_ENABLED=0).
	WorkerBinary string
	// Base, when set, is a local image (by name or id) to layer the worker
	// onto instead of scratch, e.g. one with Claude Code installed. Only the
	// worker binary, the ENTRYPOINT and the WORKDIR are added: the base keeps
	// its USER, shell and certificates. Nothing is pulled, so it must exist.
	Base string
	// Tag names the image; empty means "agora-worker:<first 12 hex digits of
	// the input hash>".
	Tag string
	// Busybox is the static busybox put at /bin/busybox, with every applet
	// (/bin/sh first) linked to it, so exec sub-agents can run shell
	// scripts. Empty means DefaultBusybox when the host has a static one
	// there; an explicit path must exist and be static. Unused with Base.
	Busybox string
	// NoBusybox leaves busybox out: the image then holds the worker alone.
	NoBusybox bool
	// CACerts is the CA bundle copied to /etc/ssl/certs/ca-certificates.crt.
	// Empty means DefaultCACerts when the host has it. Unused with Base.
	CACerts string
	// Logger receives what was decided and why; nil discards it.
	Logger *slog.Logger
}

// Result is what Build made.
type Result struct {
	// Image is the tag of the worker image.
	Image string
	// ID is the image id.
	ID string
	// InputsHash is the content hash of the inputs (also in LabelInputs).
	InputsHash string
	// Skipped reports that an image with this tag and these inputs existed.
	Skipped bool
	// Busybox reports that the image has busybox as /bin/sh.
	Busybox bool
}

// Build builds the worker image through b, unless one with the same tag and
// inputs exists already.
func Build(ctx context.Context, b compute.ImageBuilder, opts Options) (Result, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	in, err := gatherInputs(ctx, b, opts, log)
	if err != nil {
		return Result{}, fmt.Errorf("build worker image: %w", err)
	}
	buildContext, err := in.context()
	if err != nil {
		return Result{}, fmt.Errorf("build worker image: generate build context: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "agora worker image v1\nbase id %s\n", in.baseID)
	h.Write(buildContext)
	hash := hex.EncodeToString(h.Sum(nil))

	res := Result{Image: opts.Tag, InputsHash: hash, Busybox: in.busybox != nil}
	if res.Image == "" {
		res.Image = Repository + ":" + hash[:12]
	}
	info, ok, err := b.ImageExists(ctx, res.Image)
	if err != nil {
		return Result{}, fmt.Errorf("build worker image %s: %w", res.Image, err)
	}
	if ok && info.Labels[LabelInputs] == hash {
		log.Info("worker image is up to date", "image", res.Image, "id", info.ID)
		res.ID, res.Skipped = info.ID, true
		return res, nil
	}
	log.Info("building worker image", "image", res.Image, "base", in.base(), "busybox", res.Busybox, "inputs", hash)
	if err := b.BuildImage(ctx, bytes.NewReader(buildContext), res.Image, map[string]string{LabelInputs: hash}); err != nil {
		return Result{}, fmt.Errorf("build worker image: %w", err)
	}
	info, ok, err = b.ImageExists(ctx, res.Image)
	switch {
	case err != nil:
		return Result{}, fmt.Errorf("build worker image %s: %w", res.Image, err)
	case !ok || info.Labels[LabelInputs] != hash:
		return Result{}, fmt.Errorf("build worker image %s: the built image is not there afterwards", res.Image)
	}
	res.ID = info.ID
	return res, nil
}

// inputs are the files and facts that make up the image.
type inputs struct {
	worker  []byte
	busybox []byte   // nil: none
	applets []string // paths relative to /, e.g. "bin/sh"
	caCerts []byte   // nil: none
	baseRef string   // "": scratch
	baseID  string
}

func (in inputs) base() string {
	if in.baseRef == "" {
		return "scratch"
	}
	return in.baseRef
}

func gatherInputs(ctx context.Context, b compute.ImageBuilder, opts Options, log *slog.Logger) (inputs, error) {
	var in inputs
	if opts.WorkerBinary == "" {
		return in, errors.New("no worker binary given")
	}
	w, err := os.ReadFile(opts.WorkerBinary)
	if err != nil {
		return in, fmt.Errorf("worker binary: %w", err)
	}
	if err := checkStatic(w); err != nil {
		return in, fmt.Errorf("worker binary %s: %w (build it with CGO_ENABLED=0)", opts.WorkerBinary, err)
	}
	in.worker = w

	if opts.Base != "" {
		info, ok, err := b.ImageExists(ctx, opts.Base)
		if err != nil {
			return in, fmt.Errorf("base image: %w", err)
		}
		if !ok {
			return in, fmt.Errorf("base image %s is not on this engine (nothing is pulled: load or build it first)", opts.Base)
		}
		in.baseRef, in.baseID = opts.Base, info.ID
		return in, nil
	}

	if !opts.NoBusybox {
		in.busybox, in.applets, err = readBusybox(opts.Busybox, log)
		if err != nil {
			return in, err
		}
	}
	certs := opts.CACerts
	if certs == "" {
		certs = DefaultCACerts
	}
	switch c, err := os.ReadFile(certs); {
	case err == nil:
		in.caCerts = c
	case opts.CACerts == "" && errors.Is(err, fs.ErrNotExist):
		log.Warn("no CA certificates on this host: the worker image will not verify TLS peers", "path", certs)
	default:
		return in, fmt.Errorf("CA certificates: %w", err)
	}
	return in, nil
}

// readBusybox reads busybox and lists its applets. With the default path a
// missing or dynamic busybox is skipped; an explicit one must be usable.
func readBusybox(path string, log *slog.Logger) ([]byte, []string, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultBusybox
	}
	bb, err := os.ReadFile(path)
	if err == nil {
		err = checkStatic(bb)
	}
	switch {
	case err == nil:
	case explicit:
		return nil, nil, fmt.Errorf("busybox %s: %w", path, err)
	default:
		log.Info("no static busybox on this host: the worker image gets no /bin/sh (apt-get install busybox-static)", "path", path, "reason", err)
		return nil, nil, nil
	}
	applets, err := listApplets(path)
	if err != nil {
		// A busybox for another architecture cannot list its applets here;
		// the shell is the one that matters.
		log.Warn("cannot list busybox applets: linking /bin/sh only", "path", path, "error", err)
		applets = []string{"bin/sh"}
	}
	return bb, applets, nil
}

// listApplets runs busybox --list-full: "bin/sh", "usr/bin/tr", ….
func listApplets(path string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-full: %w", path, err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		a = strings.TrimPrefix(a, "/")
		// "linuxrc" (no directory) and the busybox binary itself are not applets to link.
		if !strings.Contains(a, "/") || a == "bin/busybox" || slices.Contains(strings.Split(a, "/"), "..") ||
			"/"+a == WorkerPath {
			continue
		}
		applets = append(applets, a)
	}
	if !slices.Contains(applets, "bin/sh") {
		applets = append(applets, "bin/sh")
	}
	slices.Sort(applets)
	return slices.Compact(applets), nil
}

// CheckBusybox returns nil when path is a busybox a FROM scratch worker
// image can use as /bin/sh: a statically linked ELF executable. When there
// is no file the error wraps fs.ErrNotExist. Callers that need the shell
// (agora demo) check it up front instead of finding out after a build.
func CheckBusybox(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return checkStatic(b)
}

// checkStatic returns an error unless b is a statically linked ELF
// executable, which is what a FROM scratch image can run.
func checkStatic(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("ELF type %v is not an executable", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it needs a program interpreter)")
		}
	}
	return nil
}

// Dockerfile is the Dockerfile Build sends for these options' base: scratch
// when base is empty.
func Dockerfile(base string) string {
	if base != "" {
		return "# generated by agora (images.Build): the agora worker on " + base + "\n" +
			"FROM " + base + "\n" +
			"COPY agora-worker " + WorkerPath + "\n" +
			"WORKDIR " + Workspace + "\n" +
			volumes +
			`ENTRYPOINT ["` + WorkerPath + `"]` + "\n" +
			"CMD []\n"
	}
	return "# generated by agora (images.Build): the agora worker FROM scratch\n" +
		"FROM scratch\n" +
		"# rootfs.tar carries owners and modes: /workspace is the agora user's, /tmp is 1777.\n" +
		"ADD rootfs.tar /\n" +
		"ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin\n" +
		"USER " + User + "\n" +
		"WORKDIR " + Workspace + "\n" +
		volumes +
		`ENTRYPOINT ["` + WorkerPath + `"]` + "\n"
}

// volumes declares the directories a container writes besides its
// workspace mount: where nothing is mounted there (ECS on Fargate, whose
// task volumes are root-owned unless the image declares the path a
// volume), the platform copies in the image's directory, owner and mode
// included. The Docker runner mounts both (a bind and a tmpfs), so Docker
// makes no volume for them.
const volumes = `VOLUME ["/tmp", "` + Workspace + `"]` + "\n"

// epoch is the modification time of every generated file, so the same
// inputs give the same bytes and the same hash.
var epoch = time.Unix(0, 0).UTC()

// context is the build context: the Dockerfile and either the worker alone
// (on a base) or rootfs.tar (scratch).
func (in inputs) context() ([]byte, error) {
	files := []file{{name: "Dockerfile", mode: 0o644, data: []byte(Dockerfile(in.baseRef))}}
	if in.baseRef != "" {
		files = append(files, file{name: "agora-worker", mode: 0o755, data: in.worker})
	} else {
		rootfs, err := in.rootfs()
		if err != nil {
			return nil, err
		}
		files = append(files, file{name: "rootfs.tar", mode: 0o644, data: rootfs})
	}
	return writeTar(files)
}

// rootfs is the whole scratch file system as a tar with owners and modes.
func (in inputs) rootfs() ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nagora:x:%d:%d:agora:/tmp:/bin/sh\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnobody:x:65534:\nagora:x:%d:\n", GID)
	files := []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "tmp/", dir: true, mode: 0o1777},
		{name: "usr/", dir: true, mode: 0o755},
		{name: "usr/local/", dir: true, mode: 0o755},
		{name: "usr/local/bin/", dir: true, mode: 0o755},
		{name: strings.TrimPrefix(WorkerPath, "/"), mode: 0o755, data: in.worker},
		{name: strings.TrimPrefix(Workspace, "/") + "/", dir: true, mode: 0o755, uid: UID, gid: GID},
	}
	if in.caCerts != nil {
		files = append(files,
			file{name: "etc/ssl/", dir: true, mode: 0o755},
			file{name: "etc/ssl/certs/", dir: true, mode: 0o755},
			file{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: in.caCerts})
	}
	if in.busybox != nil {
		files = append(files, file{name: "bin/", dir: true, mode: 0o755}, file{name: "bin/busybox", mode: 0o755, data: in.busybox})
		dirs := map[string]bool{}
		for _, a := range in.applets {
			for d := a; strings.Contains(d, "/"); {
				d = d[:strings.LastIndex(d, "/")]
				dirs[d+"/"] = true
			}
			files = append(files, file{name: a, link: "/bin/busybox"})
		}
		for d := range dirs {
			if !slices.ContainsFunc(files, func(f file) bool { return f.name == d }) {
				files = append(files, file{name: d, dir: true, mode: 0o755})
			}
		}
	}
	// Parents sort before their children.
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	return writeTar(files)
}

type file struct {
	name     string
	dir      bool
	link     string // symlink target
	mode     int64
	uid, gid int
	data     []byte
}

func writeTar(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case f.dir:
			h.Typeflag = tar.TypeDir
		case f.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
