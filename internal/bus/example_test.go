package bus_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agoradev/agora/internal/bus"
	"github.com/agoradev/agora/internal/natsserver"
	"github.com/agoradev/agora/schemas"
)

func ExampleBus_PublishEvent() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// An embedded server for the example; a worker gets AGORA_NATS_URL instead.
	dir, err := os.MkdirTemp("", "agora-bus-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	srv, err := natsserver.Start(ctx, natsserver.Config{StoreDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown()

	b, err := bus.Connect(ctx, srv.ClientURL(), bus.Options{Name: "example-worker"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	exitCode, durationMS := 0, int64(1500)
	ev := schemas.Event{
		Kind: schemas.KindFinished, DispatchID: "d-1", Time: time.Now().UTC(),
		ExitCode: &exitCode, DurationMS: &durationMS,
	}
	for range 2 { // the second publish stands for a retry or a recovered copy
		ack, err := b.PublishEventRetry(ctx, ev, 10*time.Second)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("sequence %d, duplicate %v\n", ack.Sequence, ack.Duplicate)
	}

	term, err := b.TerminalEvent(ctx, "d-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(term.Kind, *term.ExitCode)
	// Output:
	// sequence 1, duplicate false
	// sequence 1, duplicate true
	// dispatch.finished 0
}
