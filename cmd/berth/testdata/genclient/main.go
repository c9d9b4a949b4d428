// Command genclient drives a container's lifecycle through a client that
// oapi-codegen generated from docs/openapi.yaml (package berthapi, made by
// cmd/berth's TestGeneratedClient), proving the document usable as it is:
//
//	genclient -url http://127.0.0.1:8080 -token T -template sleeper
//
// Each step prints one line "step <name> <status>"; any departure from the
// expected answer exits 1 with the reason.
package main

// Statuses are written as berthapi.Status("…") rather than as generated
// constants: oapi-codegen prefixes constants with their type once two enums
// share a value (Status's failed and FinishRequest's outcome), so their
// names depend on the rest of the document.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"time"

	"berth.test/genclient/berthapi"
)

func main() {
	url := flag.String("url", "", "the API's base URL")
	token := flag.String("token", "", "bearer token")
	tpl := flag.String("template", "", "template to create from")
	flag.Parse()
	if err := run(*url, *token, *tpl); err != nil {
		fmt.Fprintln(os.Stderr, "genclient:", err)
		os.Exit(1)
	}
}

func run(url, token, tpl string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	auth := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
	c, err := berthapi.NewClientWithResponses(url, berthapi.WithRequestEditorFn(auth))
	if err != nil {
		return err
	}

	doc, err := c.GetOpenAPIWithResponse(ctx)
	if err != nil || doc.StatusCode() != http.StatusOK {
		return fmt.Errorf("openapi: %v %s", err, body(doc))
	}
	fmt.Println("step openapi", doc.StatusCode())

	key := fmt.Sprintf("genclient-%d", time.Now().UnixNano())
	name := "generated"
	created, err := c.CreateContainerWithResponse(ctx, &berthapi.CreateContainerParams{IdempotencyKey: &key},
		berthapi.CreateRequest{Template: tpl, Name: &name, Labels: &berthapi.Labels{"client": "oapi-codegen"}})
	if err != nil || created.JSON202 == nil {
		return fmt.Errorf("create: %v %s", err, body(created))
	}
	in := created.JSON202
	if in.Status != berthapi.Status("pending") || in.Name != name || created.Headers202 == nil || created.Headers202.Location != "/api/containers/"+in.Id {
		return fmt.Errorf("create: instance %+v, headers %+v", in, created.Headers202)
	}
	fmt.Println("step create", created.StatusCode())
	again, err := c.CreateContainerWithResponse(ctx, &berthapi.CreateContainerParams{IdempotencyKey: &key},
		berthapi.CreateRequest{Template: tpl, Name: &name, Labels: &berthapi.Labels{"client": "oapi-codegen"}})
	if err != nil || again.JSON202 == nil || again.JSON202.Id != in.Id {
		return fmt.Errorf("create replayed: %v %s", err, body(again))
	}
	fmt.Println("step create-replayed", again.StatusCode())

	if err := wait(ctx, c, in.Id, berthapi.Status("running")); err != nil {
		return err
	}
	stopped, err := c.StopContainerWithResponse(ctx, in.Id, &berthapi.StopContainerParams{})
	if err != nil || stopped.JSON202 == nil || stopped.JSON202.Status != berthapi.Status("stop_pending") {
		return fmt.Errorf("stop: %v %s", err, body(stopped))
	}
	fmt.Println("step stop", stopped.StatusCode())
	if err := wait(ctx, c, in.Id, berthapi.Status("stopped")); err != nil {
		return err
	}
	got, err := c.GetContainerWithResponse(ctx, in.Id, nil)
	if err != nil || got.JSON200 == nil {
		return fmt.Errorf("get: %v %s", err, body(got))
	}
	stale := fmt.Sprintf(`"%d"`, got.JSON200.Version-1)
	refused, err := c.StartContainerWithResponse(ctx, in.Id, &berthapi.StartContainerParams{IfMatch: &stale})
	if err != nil || refused.ApplicationproblemJSON412 == nil {
		return fmt.Errorf("start with a stale If-Match: %v %s", err, body(refused))
	}
	fmt.Println("step start-stale", refused.StatusCode())
	current := fmt.Sprintf(`"%d"`, got.JSON200.Version)
	started, err := c.StartContainerWithResponse(ctx, in.Id, &berthapi.StartContainerParams{IfMatch: &current})
	if err != nil || started.JSON202 == nil || started.JSON202.Status != berthapi.Status("start_pending") {
		return fmt.Errorf("start: %v %s", err, body(started))
	}
	fmt.Println("step start", started.StatusCode())
	if err := wait(ctx, c, in.Id, berthapi.Status("running")); err != nil {
		return err
	}
	deleted, err := c.DeleteContainerWithResponse(ctx, in.Id, &berthapi.DeleteContainerParams{})
	if err != nil || deleted.JSON202 == nil || deleted.JSON202.Status != berthapi.Status("delete_pending") {
		return fmt.Errorf("delete: %v %s", err, body(deleted))
	}
	fmt.Println("step delete", deleted.StatusCode())
	// Once deleted there is no status left to wait for: poll until 404.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		g, err := c.GetContainerWithResponse(ctx, in.Id, nil)
		if err != nil {
			return fmt.Errorf("get after delete: %w", err)
		}
		if g.ApplicationproblemJSON404 != nil {
			fmt.Println("step gone", g.StatusCode())
			break
		}
		if g.JSON200 == nil || (g.JSON200.Status != berthapi.Status("delete_pending") && g.JSON200.Status != berthapi.Status("deleting")) {
			return fmt.Errorf("get after delete: %s", body(g))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still %s: %w", g.JSON200.Status, ctx.Err())
		case <-tick.C:
		}
	}
	events, err := c.ListContainerEventsWithResponse(ctx, in.Id, &berthapi.ListContainerEventsParams{})
	if err != nil || events.JSON200 == nil || len(events.JSON200.Items) == 0 {
		return fmt.Errorf("events: %v %s", err, body(events))
	}
	last := events.JSON200.Items[len(events.JSON200.Items)-1]
	fmt.Println("step events", events.StatusCode(), last.Type)
	return nil
}

// wait asks the server to answer once the instance has status.
func wait(ctx context.Context, c *berthapi.ClientWithResponses, id string, status berthapi.Status) error {
	timeout := "20s"
	for {
		r, err := c.WaitContainerWithResponse(ctx, id, &berthapi.WaitContainerParams{Status: status, Timeout: &timeout})
		switch {
		case err != nil:
			return fmt.Errorf("wait %s: %w", status, err)
		case r.JSON200 != nil:
			fmt.Println("step wait-"+string(status), r.StatusCode())
			return nil
		case r.ApplicationproblemJSON408 != nil && ctx.Err() == nil:
			continue
		default:
			return fmt.Errorf("wait %s: %s", status, body(r))
		}
	}
}

type response interface{ StatusCode() int }

// body shows an answer: its status and body.
func body(r response) string {
	v := reflect.ValueOf(r)
	if r == nil || v.IsNil() {
		return "(no response)"
	}
	return fmt.Sprintf("%d %s", r.StatusCode(), v.Elem().FieldByName("Body").Bytes())
}
