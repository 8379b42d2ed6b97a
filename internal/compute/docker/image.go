package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"

	"github.com/agoradev/agora/internal/compute"
)

// BuildImage implements compute.ImageBuilder with the daemon's classic
// builder (BuildKit needs a session the API alone does not give). It never
// pulls; intermediate containers are removed even when the build fails. The
// build output goes to the logger at debug level.
//
// The classic builder reuses cached intermediate images, which another client
// may remove mid-build (docker rmi of an image that shares the cached layer);
// the daemon then fails with "failed to get digest", "unknown parent image ID"
// or "No such image". Such a build is retried without the cache. That makes
// the race rare but not impossible — another build may in turn reuse and
// prune this build's fresh intermediates — hence a few attempts.
func (e *Engine) BuildImage(ctx context.Context, contextTar io.Reader, tag string, labels map[string]string) error {
	buf, err := io.ReadAll(contextTar)
	if err != nil {
		return fmt.Errorf("build image %s: read build context: %w", tag, err)
	}
	err = e.buildOnce(ctx, buf, tag, labels, false)
	for retry := 1; retry <= buildRetries && err != nil && isCacheRace(err) && ctx.Err() == nil; retry++ {
		e.cfg.Logger.Warn("docker build lost a cached layer to a concurrent removal; rebuilding without cache", "tag", tag, "retry", retry, "err", err)
		err = e.buildOnce(ctx, buf, tag, labels, true)
	}
	if err != nil {
		return fmt.Errorf("build image %s: %w", tag, err)
	}
	return nil
}

// buildRetries bounds the rebuilds after a cache race.
const buildRetries = 3

func (e *Engine) buildOnce(ctx context.Context, contextTar []byte, tag string, labels map[string]string, noCache bool) error {
	resp, err := e.cli.ImageBuild(ctx, bytes.NewReader(contextTar), build.ImageBuildOptions{
		Tags:        []string{tag},
		Labels:      labels,
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		NoCache:     noCache,
		Dockerfile:  "Dockerfile",
		Version:     build.BuilderV1,
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return e.readBuildOutput(resp.Body, tag)
}

// isCacheRace tells whether a build failed because a cached intermediate image
// vanished under it.
func isCacheRace(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"failed to get digest", "unknown parent image", "no such image", "unable to find image", "layer does not exist"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// buildMessage is one line of the daemon's JSON build stream.
type buildMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// readBuildOutput drains the build stream, logging it, and returns the build
// error the daemon reports in the stream (the HTTP status is 200 either way).
func (e *Engine) readBuildOutput(r io.Reader, tag string) error {
	dec := json.NewDecoder(r)
	for {
		var m buildMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read build output: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(strings.TrimSpace(m.ErrorDetail.Message))
		}
		if m.Error != "" {
			return errors.New(strings.TrimSpace(m.Error))
		}
		if line := strings.TrimSpace(m.Stream + m.Status); line != "" {
			e.cfg.Logger.Debug("docker build", "tag", tag, "output", line)
		}
	}
}

// ImageExists implements compute.ImageBuilder.
func (e *Engine) ImageExists(ctx context.Context, ref string) (compute.ImageInfo, bool, error) {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	info, err := e.cli.ImageInspect(ctx, ref)
	switch {
	case cerrdefs.IsNotFound(err):
		return compute.ImageInfo{}, false, nil
	case err != nil:
		return compute.ImageInfo{}, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	out := compute.ImageInfo{ID: info.ID}
	if info.Config != nil {
		out.Labels = info.Config.Labels
	}
	return out, true, nil
}

// RemoveImage implements compute.ImageRemover.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	_, err := e.cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}
