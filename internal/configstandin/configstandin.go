// Package configstandin stands in for the two AWS services a deployment's
// configuration lives in, SSM Parameter Store (GetParameter) and Secrets
// Manager (GetSecretValue), and for the EventBridge bus the deployment puts
// its status changes on (PutEvents, kept in memory), speaking their AWS
// JSON 1.1 protocol so that the real aws-sdk-go-v2 clients talk to it
// through BaseEndpoint (or AWS_ENDPOINT_URL_SSM /
// AWS_ENDPOINT_URL_SECRETS_MANAGER / AWS_ENDPOINT_URL_EVENTBRIDGE). Each caller
// (a function) gets a handler of its own, and is answered only what its
// policy allows, as IAM would: the emulator uses it so that a key the
// template does not route to a function does not reach it there either.
package configstandin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Actions the stand-in answers, as IAM names them.
const (
	ActionGetParameter   = "ssm:GetParameter"
	ActionGetSecretValue = "secretsmanager:GetSecretValue"
	ActionPutEvents      = "events:PutEvents"
)

// Authorizer decides whether principal may do action on resource (an ARN).
type Authorizer func(principal, action, resource string) bool

// Store holds the parameters (every version) and secrets it serves.
// The zero value is not usable: use New.
type Store struct {
	region, account string
	allow           Authorizer

	mu         sync.Mutex
	parameters map[string][]string // name → value of version i+1
	secrets    map[string]string   // ARN → string
	events     []Event
}

// Event is an event put on a bus.
type Event struct {
	Bus        string // the bus's ARN
	Principal  string
	Source     string
	DetailType string
	Detail     string
}

// New is an empty store in region and account; allow decides every call.
func New(region, account string, allow Authorizer) *Store {
	return &Store{region: region, account: account, allow: allow, parameters: map[string][]string{}, secrets: map[string]string{}}
}

// PutParameter adds a version of the String parameter name and returns
// its number (1 for a new parameter), as ssm put-parameter --overwrite.
func (s *Store) PutParameter(name, value string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parameters[name] = append(s.parameters[name], value)
	return int64(len(s.parameters[name]))
}

// PutSecret sets the string of the secret arn.
func (s *Store) PutSecret(arn, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[arn] = value
}

// ParameterARN is the ARN IAM policies name the parameter by.
func (s *Store) ParameterARN(name string) string {
	return fmt.Sprintf("arn:aws:ssm:%s:%s:parameter/%s", s.region, s.account, strings.TrimPrefix(name, "/"))
}

// Handler answers principal's calls.
func (s *Store) Handler(principal string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			fail(w, http.StatusBadRequest, "SerializationException", err.Error())
			return
		}
		switch r.Header.Get("X-Amz-Target") {
		case "AmazonSSM.GetParameter":
			s.getParameter(w, principal, in)
		case "secretsmanager.GetSecretValue":
			s.getSecretValue(w, principal, in)
		case "AWSEvents.PutEvents":
			s.putEvents(w, principal, in)
		default:
			fail(w, http.StatusBadRequest, "UnknownOperationException", "the stand-in answers GetParameter, GetSecretValue and PutEvents only")
		}
	})
}

func (s *Store) getParameter(w http.ResponseWriter, principal string, in map[string]any) {
	sel, _ := in["Name"].(string)
	name, version := sel, int64(0)
	if i := strings.LastIndex(sel, ":"); i > 0 {
		if v, err := strconv.ParseInt(sel[i+1:], 10, 64); err == nil {
			name, version = sel[:i], v
		}
	}
	arn := s.ParameterARN(name)
	if !s.allow(principal, ActionGetParameter, arn) {
		denied(w, principal, ActionGetParameter, arn)
		return
	}
	s.mu.Lock()
	versions := s.parameters[name]
	s.mu.Unlock()
	if version == 0 {
		version = int64(len(versions))
	}
	if version < 1 || version > int64(len(versions)) {
		fail(w, http.StatusBadRequest, "ParameterVersionNotFound", fmt.Sprintf("parameter %s has no version %d", name, version))
		return
	}
	reply(w, map[string]any{"Parameter": map[string]any{
		"Name": name, "Type": "String", "Value": versions[version-1], "Version": version, "ARN": arn, "DataType": "text",
	}})
}

func (s *Store) getSecretValue(w http.ResponseWriter, principal string, in map[string]any) {
	id, _ := in["SecretId"].(string)
	if !s.allow(principal, ActionGetSecretValue, id) {
		denied(w, principal, ActionGetSecretValue, id)
		return
	}
	s.mu.Lock()
	v, ok := s.secrets[id]
	s.mu.Unlock()
	if !ok {
		fail(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	reply(w, map[string]any{"ARN": id, "Name": id, "SecretString": v, "VersionId": "1", "VersionStages": []string{"AWSCURRENT"}})
}

// BusARN is the ARN IAM policies name a bus by; bus is a name ("" is the
// default bus) or already an ARN.
func (s *Store) BusARN(bus string) string {
	if strings.HasPrefix(bus, "arn:") {
		return bus
	}
	if bus == "" {
		bus = "default"
	}
	return fmt.Sprintf("arn:aws:events:%s:%s:event-bus/%s", s.region, s.account, bus)
}

// Events are the events put so far, oldest first.
func (s *Store) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// putEvents keeps the entries principal may put and reports the others
// failed, entry by entry, as PutEvents does.
func (s *Store) putEvents(w http.ResponseWriter, principal string, in map[string]any) {
	entries, _ := in["Entries"].([]any)
	if len(entries) == 0 || len(entries) > 10 {
		fail(w, http.StatusBadRequest, "ValidationException", fmt.Sprintf("%d entries: PutEvents takes 1 to 10", len(entries)))
		return
	}
	results := make([]map[string]string, len(entries))
	failed := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range entries {
		m, _ := e.(map[string]any)
		str := func(k string) string { v, _ := m[k].(string); return v }
		arn := s.BusARN(str("EventBusName"))
		if !s.allow(principal, ActionPutEvents, arn) {
			results[i] = map[string]string{"ErrorCode": "AccessDeniedException",
				"ErrorMessage": fmt.Sprintf("%s is not authorized to perform: %s on resource: %s", principal, ActionPutEvents, arn)}
			failed++
			continue
		}
		s.events = append(s.events, Event{Bus: arn, Principal: principal, Source: str("Source"), DetailType: str("DetailType"), Detail: str("Detail")})
		results[i] = map[string]string{"EventId": strconv.Itoa(len(s.events))}
	}
	reply(w, map[string]any{"FailedEntryCount": failed, "Entries": results})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func denied(w http.ResponseWriter, principal, action, resource string) {
	fail(w, http.StatusBadRequest, "AccessDeniedException",
		fmt.Sprintf("%s is not authorized to perform: %s on resource: %s", principal, action, resource))
}

func fail(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
