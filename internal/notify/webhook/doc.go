// Package webhook provides what berth's webhook notifications need beside
// the store: the address policy every receiver URL is held to (Guard, at
// subscription and again at every connection), the HTTP client that
// delivers through it without following redirects, and the subscription
// secrets of the Standard Webhooks specification (standardwebhooks.com).
package webhook
