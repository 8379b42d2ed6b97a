package ecs_test

import (
	"testing"

	"github.com/agoradev/agora/internal/compute/computetest"
	"github.com/agoradev/agora/internal/compute/ecs/ecstest"
)

// TestConformance runs the compute conformance suite on Fargate through the
// real SDK against the loopback fake, whose tasks run on the local Docker
// engine.
func TestConformance(t *testing.T) {
	t.Parallel()
	docker := computetest.Docker(t)
	image := computetest.BusyboxImage(t, docker)
	e, _ := ecstest.Start(t, docker, ecstest.Options{})
	computetest.RunConformanceWith(t, e, image, ecstest.Limits(true))
}
