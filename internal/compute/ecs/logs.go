package ecs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
)

// Logs implements compute.Engine from the task's awslogs stream. awslogs
// keeps stdout and stderr in one stream: both go to stdout, in order, one
// line per log event; stderr gets nothing. With follow it reads until the
// task has stopped and its stream is drained, or ctx ends.
func (e *Engine) Logs(ctx context.Context, id string, follow bool, stdout, _ io.Writer) error {
	if e.isCreated(id) {
		return nil
	}
	if stdout == nil {
		stdout = io.Discard
	}
	t, err := e.find(ctx, id)
	if err != nil {
		return fmt.Errorf("logs of task %s: %w", id, err)
	}
	arn := aws.ToString(t.TaskArn)
	stream := e.cfg.LogStreamPrefix + "/" + ContainerName + "/" + arn[strings.LastIndex(arn, "/")+1:]
	r := &logReader{e: e, stream: stream, w: stdout}
	stopped := aws.ToString(t.LastStatus) == "STOPPED"
	if !follow || stopped {
		if err := r.drain(ctx); err != nil {
			return fmt.Errorf("logs of task %s: %w", id, err)
		}
		return nil
	}
	// The shared poller says when the task has stopped; until then the
	// stream is read every poll interval.
	done := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, err := e.poller.wait(wctx, arn)
		done <- err
	}()
	tick := time.NewTicker(e.cfg.PollInterval)
	defer tick.Stop()
	for {
		if err := r.drain(ctx); err != nil {
			return fmt.Errorf("logs of task %s: %w", id, err)
		}
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("logs of task %s: %w", id, err)
			}
			// Stopped: what awslogs delivered last is read once more.
			if err := r.drain(ctx); err != nil {
				return fmt.Errorf("logs of task %s: %w", id, err)
			}
			return nil
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("logs of task %s: %w", id, context.Cause(ctx))
		}
	}
}

// logReader reads one log stream forward from where it stopped.
type logReader struct {
	e      *Engine
	stream string
	w      io.Writer
	token  *string
}

// drain writes every event after the reader's token.
func (r *logReader) drain(ctx context.Context) error {
	for {
		cctx, cancel := r.e.callContext(ctx)
		out, err := r.e.logs.GetLogEvents(cctx, &cloudwatchlogs.GetLogEventsInput{
			LogGroupName:  aws.String(r.e.cfg.LogGroup),
			LogStreamName: aws.String(r.stream),
			StartFromHead: aws.Bool(true),
			NextToken:     r.token,
		})
		cancel()
		var nf *logtypes.ResourceNotFoundException
		switch {
		case errors.As(err, &nf):
			return nil // the task has written nothing yet
		case err != nil:
			if ctxErr := context.Cause(ctx); ctxErr != nil {
				return ctxErr
			}
			return fmt.Errorf("get log events of %s: %w", r.stream, err)
		}
		for _, ev := range out.Events {
			if _, err := io.WriteString(r.w, aws.ToString(ev.Message)+"\n"); err != nil {
				return err
			}
		}
		next := out.NextForwardToken
		if len(out.Events) == 0 || next == nil || (r.token != nil && *next == *r.token) {
			if next != nil {
				r.token = next
			}
			return nil
		}
		r.token = next
	}
}
