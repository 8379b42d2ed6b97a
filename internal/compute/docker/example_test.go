package docker_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/agoradev/agora/internal/compute"
	"github.com/agoradev/agora/internal/compute/docker"
)

// A runner's view of one dispatch container: create it hardened and
// labelled, start it, stream its output while waiting, settle it, remove it.
func Example() {
	ctx := context.Background()
	e, err := docker.New(docker.Config{}) // DOCKER_HOST or the default socket
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	id, err := e.Create(ctx, compute.ContainerSpec{
		Name:        "agora-d-42",
		Image:       "agora-worker:0123456789ab",
		Env:         []string{"AGORA_DISPATCH_ID=d-42", "AGORA_SPEC_FILE=/agora/spec.json"},
		Labels:      map[string]string{compute.LabelDispatchID: "d-42", compute.LabelTaskID: "t-7", compute.LabelRound: "1"},
		User:        "65532:65532",
		Mounts:      []compute.Mount{{Source: "/var/lib/agora/d-42/spec", Target: "/agora", ReadOnly: true}, {Source: "/var/lib/agora/d-42/ws", Target: "/workspace"}},
		NetworkMode: compute.NetworkHost,
		Resources:   compute.Resources{NanoCPUs: 2e9, MemoryBytes: 2 << 30, PidsLimit: 512},
		Init:        true,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Remove(context.WithoutCancel(ctx), id)
	if err := e.Start(ctx, id); err != nil {
		log.Fatal(err)
	}
	go e.Logs(ctx, id, true, os.Stdout, os.Stderr) // ends when the container stops

	res, err := e.Wait(ctx, id) // no timeout: enforce the dispatch's own with Stop
	if err != nil {
		log.Fatal(err)
	}
	switch {
	case res.OOMKilled:
		fmt.Println("dispatch failed: OOMKilled, exit", res.ExitCode)
	case !res.Successful():
		fmt.Println("dispatch container exited", res.ExitCode, res.Signal)
	}
	_ = e.Stop(ctx, id, 10*time.Second) // a no-op here: it has stopped
}
