package janitor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
)

// cronLogger adapts slog to cron.Logger. Unlike cron's PrintfLogger it keeps
// Info, so "skip" (a run skipped because the previous one still runs) is seen.
type cronLogger struct{ log *slog.Logger }

// Info logs a cron event at Info.
func (l cronLogger) Info(msg string, keysAndValues ...any) {
	l.log.Info("cron "+msg, keysAndValues...)
}

// Error logs a cron failure (a recovered panic) at Error.
func (l cronLogger) Error(err error, msg string, keysAndValues ...any) {
	l.log.Error("cron "+msg, append([]any{"err", err}, keysAndValues...)...)
}

// newCron builds the scheduler for one job, not started. The spec is what
// cron.ParseStandard accepts (5 fields or a descriptor such as "@hourly" or
// "@every 10m"), evaluated in UTC so no run falls into a DST gap or repeats
// (prefix "CRON_TZ=Europe/Berlin " for local wall-clock times). The chain is
// SkipIfStillRunning outside Recover: a panicking job is recovered inside Skip,
// so Skip's token is always returned (in cron v3.0.1 the other order skips every
// later run after one panic).
func newCron(spec string, logger *slog.Logger, job func()) (c *cron.Cron, err error) {
	l := cronLogger{log: logger}
	c = cron.New(
		cron.WithLocation(time.UTC),
		cron.WithLogger(l),
		cron.WithChain(cron.SkipIfStillRunning(l), cron.Recover(l)),
	)
	defer func() {
		// cron v3.0.1 panics on some malformed specs (e.g. "TZ=x").
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("invalid janitor schedule %q: %v", spec, r)
		}
	}()
	if _, err := c.AddFunc(spec, job); err != nil {
		return nil, fmt.Errorf("invalid janitor schedule %q: %w", spec, err)
	}
	return c, nil
}

// runCron runs c until ctx ends, then stops it and waits for a running job.
func runCron(ctx context.Context, c *cron.Cron) {
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
}
