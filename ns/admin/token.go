// Package admin guards the control paths of a running ether9: a token that
// a request to change state must carry, and the count and log of the
// requests refused for lack of it.
package admin

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// MinToken is the shortest token ether9.token= accepts: shorter ones are
// guessable over the network.
const MinToken = 16

// maxToken bounds what is compared: a header is not a place for more.
const maxToken = 256

// Token is the secret that control requests carry.
type Token struct{ secret string }

// NewToken draws a token of 32 random hex digits from crypto/rand (the
// kernel's random source).
func NewToken() (Token, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return Token{}, fmt.Errorf("token: %w", err)
	}
	return Token{secret: hex.EncodeToString(b)}, nil
}

// ParseToken checks a token given on the kernel command line: MinToken to
// 256 characters of letters, digits and "-._~" (what a URL, an aname and a
// header carry unescaped).
func ParseToken(s string) (Token, error) {
	if len(s) < MinToken || len(s) > maxToken {
		return Token{}, fmt.Errorf("token: %d characters, want %d to %d", len(s), MinToken, maxToken)
	}
	for i := 0; i < len(s); i++ {
		if !tokenChar(s[i]) {
			return Token{}, fmt.Errorf("token: character %d (%q) not a letter, digit or -._~", i, s[i])
		}
	}
	return Token{secret: s}, nil
}

func tokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// String is the secret itself: for the serial console, nowhere else.
func (t Token) String() string { return t.secret }

// Valid says whether t holds a secret: the zero Token matches nothing.
func (t Token) Valid() bool { return t.secret != "" }

// Matches compares s with the secret in constant time, so that the time
// of a refusal says nothing about how much of a guess was right.
func (t Token) Matches(s string) bool {
	if !t.Valid() || len(s) > maxToken {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(s), []byte(t.secret)) == 1
}

// Bearer takes the token out of an Authorization header value, "Bearer
// TOKEN" (RFC 6750 section 2.1; the scheme is case-insensitive).
func Bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// AnamePrefix starts the 9P attach name (or a first walk element) that
// carries the token: "token=SECRET".
const AnamePrefix = "token="

// Aname takes the token out of a 9P attach path element "token=SECRET".
func Aname(elem string) (string, bool) {
	tok, ok := strings.CutPrefix(elem, AnamePrefix)
	if !ok || tok == "" {
		return "", false
	}
	return tok, true
}
