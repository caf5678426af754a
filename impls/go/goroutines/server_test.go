//go:build scenario_echo

package main

import (
	"testing"

	"github.com/google/uuid"
)

// encodeUUID must write exactly the library's own text.
func TestEncodeUUID(t *testing.T) {
	for i := 0; i < 100; i++ {
		u := uuid.New()
		var buf [36]byte
		encodeUUID(buf[:], u)
		if string(buf[:]) != u.String() {
			t.Fatalf("encodeUUID = %s, uuid.String() = %s", buf[:], u.String())
		}
	}
}
