package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// idSource draws correlation ids for one replay. Callers hold the replay lock.
type idSource interface {
	// draw returns the id of the next call of kind within scope.
	draw(kind opKind, scope string) string
}

// positionalIDs is the engine's seeded generator: a per-run base plus n for
// the n-th draw, one counter shared by steps, waits, hooks and attributes.
type positionalIDs struct {
	base uint64
	n    uint64
}

func newPositionalIDs(runID string) *positionalIDs {
	h := fnv.New64a()
	h.Write([]byte(runID))
	return &positionalIDs{base: h.Sum64() >> 8}
}

func (p *positionalIDs) draw(kind opKind, _ string) string {
	id := fmt.Sprintf("%s_%014x", kind, p.base+p.n)
	p.n++
	return id
}

// callsiteIDs are the real engine's call-site addressed ids (#3179): each
// call is addressed by a scope plus the number of earlier calls in that
// scope, hashed with the run. The scopes are core's: a step's is
// "step <name> <fingerprint(args)>", so a replay that calls a step with other
// arguments draws another id and fails loudly instead of feeding it a
// recorded result; a sleep's is the bare "wait" (waits stay ordinals among
// waits, as in core); a hook's is "hook <token>"; an attribute's "attr".
type callsiteIDs struct {
	seed     string
	ordinals map[string]int
}

func newCallsiteIDs(runID string) *callsiteIDs {
	return &callsiteIDs{seed: runID, ordinals: map[string]int{}}
}

func (c *callsiteIDs) draw(kind opKind, scope string) string {
	n := c.ordinals[scope]
	c.ordinals[scope] = n + 1
	sum := sha256.Sum256([]byte(c.seed + "\x00" + scope + "\x00" + strconv.Itoa(n)))
	return string(kind) + "_" + hex.EncodeToString(sum[:10])
}

func newIDSource(p IDPolicy, runID string) idSource {
	if p == IDsCallsite {
		return newCallsiteIDs(runID)
	}
	return newPositionalIDs(runID)
}

// Scopes of the call-site id policy.
func stepScope(name string, args json.RawMessage) string {
	return "step " + name + " " + Fingerprint(args)
}

func hookScope(token string) string { return "hook " + token }

const (
	waitScope = "wait"
	attrScope = "attr"
)

// Fingerprint is the canonical text of a JSON value that call-site ids are
// scoped by, in the shape of core's fingerprintValue: a string is its JSON
// text, a number its shortest decimal text, true/false/null themselves, an
// object {"key":value,...} in the order its keys appear (JavaScript keeps
// insertion order; Go's encoder writes struct fields in declaration order
// and map keys sorted), an array Array{"0":v0,"1":v1,...}. Two argument
// values fingerprint alike exactly when they serialize alike. Malformed JSON
// fingerprints as its raw text.
func Fingerprint(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := fingerprint(dec, &b); err != nil {
		return string(raw)
	}
	return b.String()
}

func fingerprint(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		return fingerprintComposite(dec, b, v)
	case string:
		q, _ := json.Marshal(v)
		b.Write(q)
	case json.Number:
		b.WriteString(numberText(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

func fingerprintComposite(dec *json.Decoder, b *strings.Builder, open json.Delim) error {
	if open == '[' {
		b.WriteString("Array")
	}
	b.WriteByte('{')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		key := strconv.Itoa(i)
		if open == '{' {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ = tok.(string)
		}
		q, _ := json.Marshal(key)
		b.Write(q)
		b.WriteByte(':')
		if err := fingerprint(dec, b); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	_, err := dec.Token() // the closing delimiter
	return err
}

// numberText is JavaScript's String(n) for the numbers JSON carries:
// integers as they are, others in their shortest round-trip form.
func numberText(n json.Number) string {
	if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return string(n)
	}
	f, err := n.Float64()
	if err != nil {
		return string(n)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
