package dynamostore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// expr builds condition, update, key and filter expressions. Every
// attribute name goes through a placeholder, because berth's attribute
// names include DynamoDB reserved words (status, name, group, owner) and
// label keys are user data.
type expr struct {
	names     map[string]string
	values    map[string]types.AttributeValue
	byName    map[string]string
	condition string
	update    string
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}, byName: map[string]string{}}
}

// n returns the placeholder of an attribute name.
func (e *expr) n(name string) string {
	if ph, ok := e.byName[name]; ok {
		return ph
	}
	ph := "#n" + strconv.Itoa(len(e.byName))
	e.byName[name] = ph
	e.names[ph] = name
	return ph
}

// v returns a new value placeholder for av.
func (e *expr) v(av types.AttributeValue) string {
	ph := ":v" + strconv.Itoa(len(e.values))
	e.values[ph] = av
	return ph
}

func (e *expr) s(str string) string { return e.v(&types.AttributeValueMemberS{Value: str}) }
func (e *expr) num(i int64) string  { return e.v(numAV(i)) }

// in returns "#attr IN (:a, :b, ...)".
func (e *expr) in(attr string, vals []string) string {
	phs := make([]string, len(vals))
	for i, v := range vals {
		phs[i] = e.s(v)
	}
	return fmt.Sprintf("%s IN (%s)", e.n(attr), strings.Join(phs, ", "))
}

func (e *expr) conditionOrNil() *string {
	if e.condition == "" {
		return nil
	}
	return aws.String(e.condition)
}

func (e *expr) valuesOrNil() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

func (e *expr) namesOrNil() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

// and joins the non-empty clauses with AND.
func and(clauses ...string) string {
	var out []string
	for _, c := range clauses {
		if c != "" {
			out = append(out, "("+c+")")
		}
	}
	return strings.Join(out, " AND ")
}

func numAV(i int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(i, 10)}
}

func strAV(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
