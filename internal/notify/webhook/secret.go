package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every subscription secret, as the Standard Webhooks
// specification writes them.
const SecretPrefix = "whsec_"

// secretBytes is the signing key's length: the specification asks for
// 24 to 64 bytes.
const secretBytes = 32

// NewSecret returns a new subscription secret: SecretPrefix + base64 of
// secretBytes random bytes.
func NewSecret() string {
	key := make([]byte, secretBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Headers of a Standard Webhooks request.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Sign returns the webhook-signature value of a message: "v1," + base64 of
// HMAC-SHA256 over "<id>.<unix seconds>.<body>" keyed with the secret's
// decoded key.
func Sign(secret, msgID string, at time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(at.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
