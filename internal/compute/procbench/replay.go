package procbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/exit"
	"github.com/agoradev/agora/schemas"
)

// The replaying engine.
//
// Process mode still pays for a worker process (and its sub-agent's) per
// dispatch: half the CPU of a measured dispatch. Replay mode takes that
// away too. The first dispatch of each shape runs the real worker, as
// process mode does, and is recorded: what it printed (its signed event
// and log lines, the sub-agent's output) and what it changed in the
// writable mounts (the workspace, the staged store with a large
// partial_state or result it spilled there, the key directory it emptied).
// Every later dispatch of the same shape gets the recording played back
// with its own ids and paths, its event and log lines signed with its own
// event key, and the same files written where the worker wrote them, so
// the runner's checks (signatures, the staged blobs' hashes, the workspace
// snapshot) pass for real and everything around the worker stays real.
//
// A shape is what the worker's behaviour depends on: the spec file, the
// container spec (image, command, user, environment, mount targets) and
// the contents of the writable mounts before the run (a resumed round's
// restored workspace, the staged blobs), with the dispatch's and task's
// ids and the mounts' host paths taken out; the event key's value is left
// out too. A dispatch whose sub-agent prints something that depends on
// neither (the time, a random number) gets the recorded value.
//
// A replay that is stopped reports what the worker would: with the
// runner's cancel marker present, dispatch.cancelled and exit 0; without
// one (the runner's backstop, a foreign signal) it goes on, and is killed
// (137) once the grace has passed. ReplayConfig.Hold keeps each replay
// running a while after its started event, so a stop can meet it.

// ReplayName is how the CLI's --compute flag names the replaying engine.
const ReplayName = "replay"

// maxRecording bounds the files one recording keeps in memory; a run that
// changed more is not recorded, and its shape runs the worker each time.
const maxRecording = 64 << 20

// ReplayConfig is one replaying engine.
type ReplayConfig struct {
	Config
	// Hold is how long each replay waits after its started event before
	// it writes the recorded files and prints the rest; 0 for none.
	Hold time.Duration
}

// Replayer runs the worker once per dispatch shape and replays it for the
// rest. Safe for concurrent use.
type Replayer struct {
	cfg ReplayConfig
	// procs records: the real worker, run as process mode runs it.
	procs *Engine

	mu     sync.Mutex
	seq    int
	items  map[string]*replayItem
	names  map[string]string
	shapes map[string]*recording

	recorded, replayed atomic.Int64
}

var _ compute.Engine = (*Replayer)(nil)

// NewReplayer checks the worker binary and returns the engine.
func NewReplayer(cfg ReplayConfig) (*Replayer, error) {
	procs, err := New(cfg.Config)
	if err != nil {
		return nil, err
	}
	return &Replayer{cfg: cfg, procs: procs, items: map[string]*replayItem{}, names: map[string]string{}, shapes: map[string]*recording{}}, nil
}

// Stats are how many dispatches ran the worker (and were recorded, when
// their run could be) and how many were replays.
func (e *Replayer) Stats() (recorded, replayed int64) {
	return e.recorded.Load(), e.replayed.Load()
}

// recording is one shape's worker run, its ids and host paths replaced by
// placeholders (normalizer).
type recording struct {
	lines []recLine
	// started is the index in lines of the first event line: a replay
	// holds after it.
	started int
	files   []recFile
	res     exit.Result
}

type lineKind int

const (
	linePlain lineKind = iota
	lineEvent          // signed with the event key: text is the event's JSON
	lineLog            // signed with the event key: text is the line without its MAC
)

type recLine struct {
	stream int
	kind   lineKind
	text   string
	// newline: the line ended with one (the last one may not).
	newline bool
}

// recFile is one change the run made to a writable mount.
type recFile struct {
	mount int
	rel   string
	// removed: the path is gone; else it is a directory, a symbolic link
	// (link) or a regular file (data) with mode.
	removed bool
	mode    fs.FileMode
	link    string
	data    []byte
	// raw files keep their bytes (content-addressed blobs); the others
	// are normalized like the output.
	raw bool
}

// replayItem is one dispatch from Create to Remove.
type replayItem struct {
	id, name string
	labels   map[string]string
	created  time.Time
	spec     compute.ContainerSpec
	norm     normalizer
	// key is the dispatch's event key, read at Start before the worker (or
	// the replay) deletes its file; hold is ReplayConfig.Hold.
	key  []byte
	hold time.Duration

	started bool
	// inner is the process of a dispatch that runs the worker; "" for a
	// replay.
	inner string
	// done is closed once the dispatch has ended (and a recorded run's
	// changes have been read); res is then how it ended.
	done chan struct{}
	res  exit.Result
	out  *output
	// stopped: Stop was called; a run that was stopped is not what its
	// shape does, and is not recorded.
	stopped atomic.Bool
	// term asks a replay to take the stop signal; kill ends it.
	term     chan struct{}
	kill     chan struct{}
	killOnce sync.Once
}

// Create implements compute.Engine. Beyond process mode's refusals it
// refuses a worker that publishes its own events (AGORA_NATS_URL: a replay
// only prints them, for the runner to relay) and one with no event key to
// sign them with.
func (e *Replayer) Create(_ context.Context, spec compute.ContainerSpec) (string, error) {
	if err := checkSpec(spec, e.cfg.Image); err != nil {
		return "", fmt.Errorf("create replay %s: %w", spec.Name, err)
	}
	env := envMap(spec.Env)
	if env[schemas.EnvNATSURL] != "" {
		return "", fmt.Errorf("create replay %s: %w: a replay prints its events for the runner to relay; it cannot publish them (drop the runner's --worker-nats)", spec.Name, compute.ErrInvalidSpec)
	}
	if env[schemas.EnvEventKeyFile] == "" || env[schemas.EnvSpecFile] == "" {
		return "", fmt.Errorf("create replay %s: %w: a replay needs the dispatch's spec file and event key (%s, %s)", spec.Name, compute.ErrInvalidSpec, schemas.EnvSpecFile, schemas.EnvEventKeyFile)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if spec.Name != "" {
		if _, ok := e.names[spec.Name]; ok {
			return "", fmt.Errorf("create replay %s: %w", spec.Name, compute.ErrAlreadyExists)
		}
	}
	e.seq++
	id := fmt.Sprintf("replay-%d-%d", os.Getpid(), e.seq)
	name := orDefault(spec.Name, id)
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[compute.LabelManaged] = "true"
	it := &replayItem{id: id, name: name, labels: labels, created: time.Now(), spec: spec,
		norm: newNormalizer(spec), done: make(chan struct{}), term: make(chan struct{}, 1), kill: make(chan struct{})}
	e.items[id] = it
	e.names[name] = id
	return id, nil
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func (e *Replayer) get(id string) (*replayItem, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if it, ok := e.items[id]; ok {
		return it, nil
	}
	if iid, ok := e.names[id]; ok {
		return e.items[iid], nil
	}
	return nil, fmt.Errorf("replay %s: %w", id, compute.ErrNotFound)
}

// Start implements compute.Engine: the dispatch's shape is replayed when
// it has been recorded, else the worker runs and is recorded.
func (e *Replayer) Start(ctx context.Context, id string) error {
	it, err := e.get(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	started := it.started
	e.mu.Unlock()
	if started {
		return nil
	}
	key, err := readEventKey(hostPath(it.spec.Mounts, envMap(it.spec.Env)[schemas.EnvEventKeyFile]))
	if err != nil {
		return fmt.Errorf("start replay %s: %w", it.name, err)
	}
	it.key, it.hold = key, e.cfg.Hold
	shape, before, err := it.shape()
	if err != nil {
		return fmt.Errorf("start replay %s: %w", it.name, err)
	}
	e.mu.Lock()
	rec := e.shapes[shape]
	e.mu.Unlock()
	if rec != nil {
		e.replayed.Add(1)
		e.mu.Lock()
		it.out, it.started = newOutput(), true
		e.mu.Unlock()
		go it.replay(rec)
		return nil
	}
	inner, err := e.procs.Create(ctx, it.spec)
	if err != nil {
		return fmt.Errorf("start replay %s: %w", it.name, err)
	}
	if err := e.procs.Start(ctx, inner); err != nil {
		_ = e.procs.Remove(context.WithoutCancel(ctx), inner)
		return err
	}
	e.recorded.Add(1)
	e.mu.Lock()
	it.inner, it.started = inner, true
	e.mu.Unlock()
	go e.record(it, shape, before)
	return nil
}

// record waits for the worker's run and, when it ended on its own, keeps
// what it printed and changed as the shape's recording.
func (e *Replayer) record(it *replayItem, shape string, before []map[string]fileState) {
	p, err := e.procs.get(it.inner)
	if err != nil {
		close(it.done)
		return
	}
	<-p.done
	it.res = p.res
	defer close(it.done)
	if p.res.Signal != "" || p.res.Err != nil || it.stopped.Load() {
		return // stopped or lost: not what the shape does
	}
	rec, err := it.recordRun(p.out, before)
	if err != nil {
		return
	}
	rec.res = exit.Result{ExitCode: p.res.ExitCode}
	e.mu.Lock()
	if e.shapes[shape] == nil {
		e.shapes[shape] = rec
	}
	e.mu.Unlock()
}

// Wait implements compute.Engine.
func (e *Replayer) Wait(ctx context.Context, id string) (exit.Result, error) {
	it, err := e.get(id)
	if err != nil {
		return exit.Result{}, err
	}
	e.mu.Lock()
	started := it.started
	e.mu.Unlock()
	if !started {
		return exit.Result{}, fmt.Errorf("wait for replay %s: not started", it.name)
	}
	select {
	case <-it.done:
		return it.res, nil
	case <-ctx.Done():
		return exit.Result{}, fmt.Errorf("wait for replay %s: %w", it.name, context.Cause(ctx))
	}
}

// Logs implements compute.Engine.
func (e *Replayer) Logs(ctx context.Context, id string, follow bool, stdout, stderr io.Writer) error {
	it, err := e.get(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	inner, out := it.inner, it.out
	e.mu.Unlock()
	switch {
	case inner != "":
		return e.procs.Logs(ctx, inner, follow, stdout, stderr)
	case out != nil:
		if err := out.copy(ctx, follow, stdout, stderr); err != nil {
			return fmt.Errorf("output of replay %s: %w", it.name, err)
		}
	}
	return nil
}

// Stop implements compute.Engine.
func (e *Replayer) Stop(ctx context.Context, id string, grace time.Duration) error {
	it, err := e.get(id)
	if err != nil {
		return err
	}
	it.stopped.Store(true)
	e.mu.Lock()
	started, inner := it.started, it.inner
	e.mu.Unlock()
	switch {
	case !started:
		return nil
	case inner != "":
		return e.procs.Stop(ctx, inner, grace)
	}
	select {
	case <-it.done:
		return nil
	default:
	}
	if grace > 0 && it.spec.StopSignal != "SIGKILL" {
		select {
		case it.term <- struct{}{}:
		default:
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-it.done:
			return nil
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("stop replay %s: %w", it.name, context.Cause(ctx))
		}
	}
	it.killOnce.Do(func() { close(it.kill) })
	select {
	case <-it.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop replay %s: %w", it.name, context.Cause(ctx))
	}
}

// Remove implements compute.Engine.
func (e *Replayer) Remove(ctx context.Context, id string) error {
	it, err := e.get(id)
	if errors.Is(err, compute.ErrNotFound) {
		return nil
	}
	if err := e.Stop(ctx, id, 0); err != nil {
		return err
	}
	e.mu.Lock()
	inner := it.inner
	delete(e.items, it.id)
	delete(e.names, it.name)
	e.mu.Unlock()
	if inner != "" {
		return e.procs.Remove(ctx, inner)
	}
	return nil
}

// List implements compute.Engine.
func (e *Replayer) List(_ context.Context, labels map[string]string) ([]compute.Container, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var list []compute.Container
	for _, it := range e.items {
		match := true
		for k, v := range labels {
			if it.labels[k] != v {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		c := compute.Container{ID: it.id, Name: it.name, Labels: maps.Clone(it.labels), Created: it.created, State: "created"}
		if it.started {
			c.State = "running"
			select {
			case <-it.done:
				c.State, c.ExitCode = "exited", it.res.ExitCode
			default:
			}
		}
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b compute.Container) int { return a.Created.Compare(b.Created) })
	return list, nil
}

// normalizer turns one dispatch's ids and host paths into placeholders
// (norm) and placeholders into another's (denorm).
type normalizer struct {
	norm, denorm *strings.Replacer
}

// minIDLen is the shortest task id taken out of a shape: a shorter one
// would match too much else.
const minIDLen = 6

func newNormalizer(spec compute.ContainerSpec) normalizer {
	type pair struct{ value, placeholder string }
	var pairs []pair
	for i, m := range spec.Mounts {
		pairs = append(pairs, pair{m.Source, "\x00src" + strconv.Itoa(i) + "\x00"}, pair{m.Target, "\x00dst" + strconv.Itoa(i) + "\x00"})
	}
	// Longest first: a host path holds the dispatch's id, a stage mount's
	// target is its host path.
	slices.SortStableFunc(pairs, func(a, b pair) int { return len(b.value) - len(a.value) })
	if id := spec.Labels[compute.LabelDispatchID]; id != "" {
		pairs = append(pairs, pair{id, "\x00dispatch\x00"})
	}
	if id := spec.Labels[compute.LabelTaskID]; len(id) >= minIDLen {
		pairs = append(pairs, pair{id, "\x00task\x00"})
	}
	var n, d []string
	for _, p := range pairs {
		if p.value == "" || p.value == "/" {
			continue
		}
		n = append(n, p.value, p.placeholder)
		d = append(d, p.placeholder, p.value)
	}
	return normalizer{norm: strings.NewReplacer(n...), denorm: strings.NewReplacer(d...)}
}

// readEventKey reads the key file the runner wrote for the worker.
func readEventKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the dispatch's event key: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != schemas.EventKeyBytes {
		return nil, fmt.Errorf("the dispatch's event key %s is malformed", path)
	}
	return key, nil
}

// fileState is one path of a writable mount before the run.
type fileState struct {
	mode fs.FileMode
	sum  [32]byte
	link string
}

// writable are the indexes of the mounts the worker may change.
func (it *replayItem) writable() []int {
	var out []int
	for i, m := range it.spec.Mounts {
		if !m.ReadOnly {
			out = append(out, i)
		}
	}
	return out
}

// shape digests what the worker's run depends on and returns the
// writable mounts' states it read on the way.
func (it *replayItem) shape() (string, []map[string]fileState, error) {
	s := it.spec
	h := sha256.New()
	put := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(it.norm.norm.Replace(p)))
			h.Write([]byte{0})
		}
	}
	put("image", s.Image, s.User, s.WorkingDir, s.NetworkMode, s.StopSignal)
	put(append([]string{"entrypoint"}, s.Entrypoint...)...)
	put(append([]string{"cmd"}, s.Cmd...)...)
	put(append([]string{"env"}, s.Env...)...)
	for _, m := range s.Mounts {
		put("mount", m.Target, strconv.FormatBool(m.ReadOnly))
	}
	env := envMap(s.Env)
	spec, err := os.ReadFile(hostPath(s.Mounts, env[schemas.EnvSpecFile]))
	if err != nil {
		return "", nil, fmt.Errorf("read the dispatch spec: %w", err)
	}
	put("spec", string(spec))
	key := hostPath(s.Mounts, env[schemas.EnvEventKeyFile])
	before := make([]map[string]fileState, len(s.Mounts))
	for _, i := range it.writable() {
		st, err := readTree(s.Mounts[i].Source, key)
		if err != nil {
			return "", nil, err
		}
		before[i] = st
		for _, rel := range slices.Sorted(maps.Keys(st)) {
			f := st[rel]
			put("file", strconv.Itoa(i), rel, f.mode.String(), hex.EncodeToString(f.sum[:]), f.link)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), before, nil
}

// readTree is every path under root with its type, mode and content's
// sha256 (not the event key file's: its value is the dispatch's own).
func readTree(root, skipContent string) (map[string]fileState, error) {
	out := map[string]fileState{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == root {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := fileState{mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			st.link, err = os.Readlink(path)
		case info.Mode().IsRegular() && path != skipContent:
			var data []byte
			data, err = os.ReadFile(path)
			st.sum = sha256.Sum256(data)
		}
		if err != nil {
			return err
		}
		out[rel] = st
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read mount %s: %w", root, err)
	}
	return out, nil
}

// recordRun turns an ended worker run into a recording: its output lines,
// classified by the event key it was given, and the changes it made.
func (it *replayItem) recordRun(out *output, before []map[string]fileState) (*recording, error) {
	key := it.key
	rec := &recording{started: -1}
	var bufs [3][]byte
	add := func(stream int, line []byte) {
		l := recLine{stream: stream, newline: bytes.HasSuffix(line, []byte("\n"))}
		switch data, ok := schemas.VerifyEventLine(key, line); {
		case key != nil && ok:
			l.kind, l.text = lineEvent, string(data)
			if rec.started < 0 {
				rec.started = len(rec.lines)
			}
		default:
			if data, ok := schemas.VerifyLogLine(key, line); key != nil && ok {
				l.kind, l.text = lineLog, string(data)
			} else {
				l.text = strings.TrimSuffix(string(line), "\n")
			}
		}
		l.text = it.norm.norm.Replace(l.text)
		rec.lines = append(rec.lines, l)
	}
	out.mu.Lock()
	chunks := slices.Clone(out.chunks)
	out.mu.Unlock()
	for _, c := range chunks {
		b := append(bufs[c.stream], c.data...)
		for {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			add(c.stream, b[:i+1])
			b = b[i+1:]
		}
		bufs[c.stream] = append([]byte(nil), b...)
	}
	for stream, b := range bufs {
		if len(b) > 0 {
			add(stream, b)
		}
	}
	if key == nil || rec.started < 0 {
		return nil, errors.New("no signed event line: not replayable")
	}
	size := 0
	for _, i := range it.writable() {
		changes, n, err := diffTree(i, it.spec.Mounts[i].Source, before[i], it.norm)
		if err != nil {
			return nil, err
		}
		rec.files = append(rec.files, changes...)
		if size += n; size > maxRecording {
			return nil, fmt.Errorf("the run changed over %d bytes: not recorded", maxRecording)
		}
	}
	return rec, nil
}

// diffTree lists what the run changed under root against before.
func diffTree(mount int, root string, before map[string]fileState, n normalizer) ([]recFile, int, error) {
	after, err := readTree(root, "")
	if err != nil {
		return nil, 0, err
	}
	var out []recFile
	size := 0
	for _, rel := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[rel]; !ok {
			out = append(out, recFile{mount: mount, rel: rel, removed: true})
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(after)) {
		a := after[rel]
		if b, ok := before[rel]; ok && b == a {
			continue
		}
		f := recFile{mount: mount, rel: n.norm.Replace(rel), mode: a.mode, link: a.link}
		if a.mode.IsRegular() {
			data, err := os.ReadFile(filepath.Join(root, rel))
			if err != nil {
				return nil, 0, err
			}
			size += len(data)
			f.raw = isBlobName(filepath.Base(rel))
			if f.raw {
				f.data = data
			} else {
				f.data = []byte(n.norm.Replace(string(data)))
			}
		}
		out = append(out, f)
	}
	return out, size, nil
}

// isBlobName reports a content-addressed file (a sha256 in hex): its bytes
// must stay what its name says.
func isBlobName(name string) bool {
	if len(name) != 64 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil
}

// replay plays rec back as this dispatch's run.
func (it *replayItem) replay(rec *recording) {
	start := time.Now()
	defer func() {
		it.out.close()
		close(it.done)
	}()
	key := it.key
	env := envMap(it.spec.Env)
	write := func(l recLine) {
		text := it.norm.denorm.Replace(l.text)
		var line []byte
		switch l.kind {
		case lineEvent:
			line = schemas.SignEventLine(key, retime([]byte(text)))
		case lineLog:
			line = schemas.SignLogLine(key, []byte(text))
		default:
			line = []byte(text)
		}
		if l.newline {
			line = append(line, '\n')
		}
		_, _ = it.out.writer(l.stream).Write(line)
	}
	for _, l := range rec.lines[:rec.started+1] {
		write(l)
	}
	// The hold is where a stop is taken: it ends the replay or, without
	// the runner's cancel marker, is ignored as the worker ignores it.
	// Without a hold only a stop already asked for is taken.
	stopped := func(wait time.Duration) bool {
		// A nil channel never fires: with no hold, default ends the wait.
		var hold <-chan time.Time
		if wait > 0 {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			hold = timer.C
		}
		for {
			var term bool
			if hold == nil {
				select {
				case <-it.kill:
				case <-it.term:
					term = true
				default:
					return false
				}
			} else {
				select {
				case <-it.kill:
				case <-it.term:
					term = true
				case <-hold:
					return false
				}
			}
			if !term {
				it.res = exit.Result{ExitCode: 128 + int(syscall.SIGKILL), Signal: "SIGKILL"}
				return true
			}
			// The worker takes a SIGTERM as a cancel only with the
			// runner's marker; it ignores any other.
			if marker := env[schemas.EnvCancelFile]; marker != "" {
				if _, err := os.Stat(hostPath(it.spec.Mounts, marker)); err == nil {
					started := it.norm.denorm.Replace(rec.lines[rec.started].text)
					_, _ = it.out.writer(1).Write(append(schemas.SignEventLine(key, cancelledEvent([]byte(started), time.Since(start))), '\n'))
					it.res = exit.Result{ExitCode: 0}
					return true
				}
			}
		}
	}
	if stopped(it.hold) {
		return
	}
	if err := it.apply(rec.files); err != nil {
		_, _ = fmt.Fprintf(it.out.writer(2), "agora replay: write the recorded files: %v\n", err)
		it.res = exit.Result{ExitCode: 1}
		return
	}
	for _, l := range rec.lines[rec.started+1:] {
		write(l)
	}
	it.res = rec.res
}

// apply writes a recording's changes into this dispatch's mounts.
func (it *replayItem) apply(files []recFile) error {
	for _, f := range files {
		m := it.spec.Mounts[f.mount]
		path := filepath.Join(m.Source, filepath.FromSlash(it.norm.denorm.Replace(f.rel)))
		if !strings.HasPrefix(path, filepath.Clean(m.Source)+string(filepath.Separator)) {
			return fmt.Errorf("%s leaves its mount", f.rel)
		}
		var err error
		switch {
		case f.removed:
			err = os.RemoveAll(path)
		case f.mode.IsDir():
			if err = os.MkdirAll(path, f.mode.Perm()); err == nil {
				err = os.Chmod(path, f.mode.Perm())
			}
		case f.mode&fs.ModeSymlink != 0:
			_ = os.Remove(path)
			err = os.Symlink(it.norm.denorm.Replace(f.link), path)
		default:
			data := f.data
			if !f.raw {
				data = []byte(it.norm.denorm.Replace(string(data)))
			}
			if err = os.WriteFile(path, data, f.mode.Perm()); err == nil {
				err = os.Chmod(path, f.mode.Perm())
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// retime sets an event's time to now, as the worker stamps each event
// when it makes it, and leaves every other byte as the worker wrote it.
// The worker's encoder writes the top-level "time" before any field that
// could hold another (a partial_state, a result), and inside a string a
// quote is escaped, so the first `"time":"` is the event's own.
func retime(data []byte) []byte {
	const field = `"time":"`
	i := bytes.Index(data, []byte(field))
	if i < 0 {
		return data
	}
	start := i + len(field)
	end := bytes.IndexByte(data[start:], '"')
	if end < 0 {
		return data
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	out := make([]byte, 0, len(data)+len(now))
	out = append(out, data[:start]...)
	out = append(out, now...)
	return append(out, data[start+end:]...)
}

// cancelledEvent is the worker's dispatch.cancelled for the dispatch whose
// started event is started.
func cancelledEvent(started []byte, ran time.Duration) []byte {
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(started, &ev); err != nil {
		return started
	}
	now, _ := json.Marshal(time.Now().UTC())
	ev["time"] = now
	ev["kind"] = json.RawMessage(`"` + string(schemas.KindCancelled) + `"`)
	ev["exit_code"] = json.RawMessage("0")
	ev["duration_ms"] = json.RawMessage(strconv.FormatInt(ran.Milliseconds(), 10))
	out, err := json.Marshal(ev)
	if err != nil {
		return started
	}
	return out
}
