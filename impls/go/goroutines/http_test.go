//go:build scenario_http

package main

import "testing"

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
