package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store"
)

// templateItem is a template as stored: its JSON (the shape admins publish)
// with the name and version beside it as attributes, so writes can be
// conditioned on the version.
type templateItem struct {
	Name    string `dynamodbav:"name"`
	Version int64  `dynamodbav:"version"`
	Doc     string `dynamodbav:"doc"`
	// ImageStatus is the last image check as JSON, written apart from the
	// doc (SetImageStatus) and dropped by a put, which replaces the item.
	ImageStatus string `dynamodbav:"image_status,omitempty"`
}

func templateKey(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrName: strAV(name)}
}

func unmarshalTemplate(av map[string]types.AttributeValue) (container.Template, error) {
	var it templateItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return container.Template{}, fmt.Errorf("decode template: %w", err)
	}
	var t container.Template
	if err := json.Unmarshal([]byte(it.Doc), &t); err != nil {
		return container.Template{}, fmt.Errorf("decode template %q: %w", it.Name, err)
	}
	t.Name, t.Version, t.ImageStatus = it.Name, it.Version, nil
	if it.ImageStatus != "" {
		if err := json.Unmarshal([]byte(it.ImageStatus), &t.ImageStatus); err != nil {
			return container.Template{}, fmt.Errorf("decode image status of template %q: %w", it.Name, err)
		}
	}
	return t, nil
}

// templateUnchanged conditions a create on its template still being t, as
// the caller read it: the stored doc is t's TemplateDoc.
func templateUnchanged(t container.Template) (*expr, error) {
	doc, err := store.TemplateDoc(t)
	if err != nil {
		return nil, err
	}
	e := newExpr()
	e.condition = e.n("doc") + " = " + e.s(string(doc))
	return e, nil
}

// PutTemplate creates or replaces a template, bumping its version. The
// write is conditioned on the version it replaces, so two concurrent puts
// both land, one after the other, each with its own version.
func (s *Store) PutTemplate(ctx context.Context, t container.Template) (container.Template, bool, error) {
	return s.putTemplate(ctx, "put template", t, func(item map[string]types.AttributeValue, e *expr) (error, error) {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String(s.templates),
			Item:                      item,
			ConditionExpression:       aws.String(e.condition),
			ExpressionAttributeNames:  e.namesOrNil(),
			ExpressionAttributeValues: e.valuesOrNil(),
		})
		switch {
		case err == nil:
			return nil, nil
		case isConditionFailed(err):
			return err, nil // another put won; build on its version
		}
		return nil, fail("put template", s.templates, t.Name, err)
	})
}

// putTemplate is the one loop of every template write: it builds the item
// on the stored version and hands it to write, which returns lost when
// another put won (the loop then builds on the new version), or err to end
// the loop. Both nil: written.
func (s *Store) putTemplate(ctx context.Context, op string, t container.Template,
	write func(item map[string]types.AttributeValue, cond *expr) (lost, err error)) (container.Template, bool, error) {
	if t.Name == "" {
		return container.Template{}, false, fmt.Errorf("dynamostore: %s: template has no name", op)
	}
	var lost error
	for attempt := 1; attempt <= s.maxAttempts; attempt++ {
		if attempt > 1 {
			if err := pause(ctx, attempt-1, lost); err != nil {
				return container.Template{}, false, err
			}
		}
		item, cond, created, err := s.templatePut(ctx, t)
		if err != nil {
			return container.Template{}, false, err
		}
		if lost, err = write(item, cond); err != nil {
			return container.Template{}, false, err
		}
		if lost == nil {
			stored, err := unmarshalTemplate(item)
			return stored, created, err
		}
	}
	return container.Template{}, false, errContention(op, s.templates, t.Name, s.maxAttempts, lost)
}

// GetTemplate returns a template or ErrNotFound.
func (s *Store) GetTemplate(ctx context.Context, name string) (container.Template, error) {
	const op = "get template"
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.templates),
		Key:            templateKey(name),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return container.Template{}, fail(op, s.templates, name, err)
	}
	if out.Item == nil {
		return container.Template{}, failWith(store.ErrNotFound, op, s.templates, name)
	}
	t, err := unmarshalTemplate(out.Item)
	if err != nil {
		return container.Template{}, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.templates, name, err)
	}
	return t, nil
}

// ListTemplates returns every template, by name. Templates are few (an
// admin publishes them), so a consistent scan is the simplest exact answer.
func (s *Store) ListTemplates(ctx context.Context) ([]container.Template, error) {
	const op = "list templates"
	in := &dynamodb.ScanInput{TableName: aws.String(s.templates), ConsistentRead: aws.Bool(true)}
	out := []container.Template{}
	for {
		page, err := s.client.Scan(ctx, in)
		if err != nil {
			return nil, fail(op, s.templates, "", err)
		}
		for _, av := range page.Items {
			t, err := unmarshalTemplate(av)
			if err != nil {
				return nil, fmt.Errorf("dynamostore: %s %s: %w", op, s.templates, err)
			}
			out = append(out, t)
		}
		if page.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	slices.SortFunc(out, func(a, b container.Template) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteTemplate removes a template; ErrNotFound if there is none.
func (s *Store) DeleteTemplate(ctx context.Context, name string) error {
	const op = "delete template"
	e := newExpr()
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(s.templates),
		Key:                      templateKey(name),
		ConditionExpression:      aws.String("attribute_exists(" + e.n(AttrName) + ")"),
		ExpressionAttributeNames: e.names,
	})
	return s.templateWritten(op, name, err)
}

// SetImageStatus writes the template's image check as its own attribute,
// conditioned on the template existing; the version is left alone.
func (s *Store) SetImageStatus(ctx context.Context, name string, status []container.ImageStatus) error {
	const op = "set image status"
	doc, err := json.Marshal(status)
	if err != nil {
		return fmt.Errorf("dynamostore: %s %s %q: %w", op, s.templates, name, err)
	}
	e := newExpr()
	e.condition = "attribute_exists(" + e.n(AttrName) + ")"
	update := "SET " + e.n("image_status") + " = " + e.s(string(doc))
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.templates),
		Key:                       templateKey(name),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(e.condition),
		ExpressionAttributeNames:  e.namesOrNil(),
		ExpressionAttributeValues: e.valuesOrNil(),
	})
	return s.templateWritten(op, name, err)
}

// templatePut builds the put of t over the stored template: the item at
// the next version and its condition (the version it replaces, or none
// stored).
func (s *Store) templatePut(ctx context.Context, t container.Template) (map[string]types.AttributeValue, *expr, bool, error) {
	const op = "put template"
	cur, err := s.GetTemplate(ctx, t.Name)
	created := errors.Is(err, store.ErrNotFound)
	if err != nil && !created {
		return nil, nil, false, err
	}
	next := t
	next.ImageStatus = nil
	next.Version = cur.Version + 1
	next.UpdatedAt = s.now().UTC().Format(time.RFC3339)
	// The doc is the template's TemplateDoc, which a create built from
	// a cached copy is checked against (templateUnchanged).
	doc, err := store.TemplateDoc(next)
	if err != nil {
		return nil, nil, false, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.templates, t.Name, err)
	}
	item, err := attributevalue.MarshalMap(templateItem{Name: next.Name, Version: next.Version, Doc: string(doc)})
	if err != nil {
		return nil, nil, false, fmt.Errorf("dynamostore: %s %s %q: %w", op, s.templates, t.Name, err)
	}
	e := newExpr()
	if created {
		e.condition = "attribute_not_exists(" + e.n(AttrName) + ")"
	} else {
		e.condition = e.n("version") + " = " + e.num(cur.Version)
	}
	return item, e, created, nil
}

// templateWritten is the outcome of a write conditioned on the template
// existing: a failed condition is store.ErrNotFound.
func (s *Store) templateWritten(op, name string, err error) error {
	switch {
	case err == nil:
		return nil
	case isConditionFailed(err):
		return failWith(store.ErrNotFound, op, s.templates, name)
	default:
		return fail(op, s.templates, name, err)
	}
}
