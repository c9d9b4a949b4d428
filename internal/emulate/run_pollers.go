package emulate

import (
	"context"
	"fmt"

	"github.com/berth-io/berth/internal/samtemplate"
	"github.com/berth-io/berth/internal/startstop"
)

// startPollers starts the pollers that play the template's event source
// mappings and its schedules, as one service group. They run until Run
// ends, not ctx: they stop after the front door (close runs undo last
// added first), so a request in flight finishes.
func (e *emulation) startPollers(ctx context.Context) error {
	var pollers []startstop.Service
	for _, start := range []func(*[]startstop.Service) error{e.streamPollers, e.queuePollers, e.schedules} {
		if err := start(&pollers); err != nil {
			return err
		}
	}
	g := startstop.NewGroup("pollers", e.log).Stage("pollers", pollers...)
	if err := g.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	e.undo = append(e.undo, g.Stop)
	return nil
}

// streamPollers adds the pollers that play the DynamoDB stream event source
// mappings.
func (e *emulation) streamPollers(pollers *[]startstop.Service) error {
	region, stack := e.tplOpts.Region, e.stack
	for _, m := range stack.Streams {
		if !m.Settings.Enabled {
			continue
		}
		flt, err := parseFilter(m.Settings.Filters)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		p := &streamPoller{m: m, call: e.fns[m.Function].call, filter: flt, streams: e.streams, streamARN: e.streamARNs[m.Table], sqs: e.sqs,
			fnARN: fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", region, samtemplate.DefaultAccountID, stack.Functions[m.Function].Name), log: e.log}
		if m.Settings.OnFailure != "" {
			q := e.queues[m.Settings.OnFailure]
			p.onFailure = &q
		}
		*pollers = append(*pollers, startstop.New("stream mapping "+m.Name, startstop.Until(p.run)))
		e.log.Info("stream mapping", "mapping", m.Name, "table", stack.Tables[m.Table].Name, "batch_size", m.Settings.BatchSize,
			"bisect", m.Settings.Bisect, "max_retries", m.Settings.MaxRetries, "max_record_age", m.Settings.MaxRecordAge.String(),
			"report_batch_item_failures", m.Settings.ReportBatchItemFailures, "filters", m.Settings.Filters, "on_failure", m.Settings.OnFailure)
	}
	return nil
}

// queuePollers adds the pollers that play the SQS event source mappings.
func (e *emulation) queuePollers(pollers *[]startstop.Service) error {
	for _, m := range e.stack.QueueMaps {
		if !m.Settings.Enabled {
			continue
		}
		flt, err := parseFilter(m.Settings.Filters)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		p := &queuePoller{m: m, fn: e.fns[m.Function], filter: flt, q: e.queues[m.Queue], region: e.tplOpts.Region, sqs: e.sqs, log: e.log}
		*pollers = append(*pollers, startstop.New("queue mapping "+m.Name, startstop.Until(p.run)))
		q := e.stack.Queues[m.Queue]
		e.log.Info("queue mapping", "mapping", m.Name, "queue", q.Name, "batch_size", m.Settings.BatchSize,
			"concurrency", p.concurrency(), "visibility_timeout", e.queues[m.Queue].Visibility.String(),
			"dead_letter", q.DeadLetter, "max_receive_count", q.MaxReceiveCount, "report_batch_item_failures", m.Settings.ReportBatchItemFailures)
	}
	return nil
}

// schedules adds the schedulers that play the schedules, at the rates the
// options may replace.
func (e *emulation) schedules(pollers *[]startstop.Service) error {
	o, stack := &e.o, e.stack
	for _, s := range stack.Schedules {
		if !s.Enabled {
			continue
		}
		every, err := parseRate(s.Expression)
		always := runsAlways(stack.Functions[s.Function])
		switch d, ok := o.Schedules[s.Function]; {
		case ok:
			every, err = d, nil
		case o.ScheduleEvery > 0 && !always:
			every, err = o.ScheduleEvery, nil
		}
		if every < 0 {
			e.log.Warn("schedule turned off by the options", "schedule", s.Name, "function", s.Function)
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		sc := &scheduler{s: s, fn: e.fns[s.Function], every: every, region: e.tplOpts.Region, log: e.log,
			atStart: always}
		*pollers = append(*pollers, startstop.New("schedule "+s.Name, startstop.Until(sc.run)))
		e.log.Info("schedule", "schedule", s.Name, "function", s.Function, "expression", s.Expression, "every", every.String(),
			"at_start", sc.atStart)
	}
	return nil
}
