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

func TestValidToken(t *testing.T) {
	long := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" // 64
	for tok, want := range map[string]bool{
		"a": true, "t0-1_x": true, long: true, long + "a": false, "": false, "a b": false, "a/b": false, "ä": false,
	} {
		if got := validToken(tok); got != want {
			t.Errorf("validToken(%q) = %v, want %v", tok, got, want)
		}
	}
}
