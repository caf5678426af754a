package protocol

import (
	"math"
	"net/netip"
	"testing"
)

func TestProduct(t *testing.T) {
	cases := []struct {
		a, b, c, want int64
		ok            bool
	}{
		{3, 5, 7, 105, true},
		{1, 1, math.MaxInt64, math.MaxInt64, true},
		{2, 1, math.MaxInt64, 0, false},
		{1 << 32, 1 << 31, 1, 0, false},
		{1 << 31, 1 << 31, 2, 0, false},
		{1000, 1000000, 10000000000000, 0, false},
	}
	for _, c := range cases {
		got, ok := product(c.a, c.b, c.c)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("product(%d,%d,%d) = %d,%v; want %d,%v", c.a, c.b, c.c, got, ok, c.want, c.ok)
		}
	}
}

func TestParseInt(t *testing.T) {
	good := map[string]int64{"0": 0, "42": 42, "-3": -3, "007": 7, "9223372036854775807": math.MaxInt64}
	for s, want := range good {
		if v, err := parseInt(s); err != nil || v != want {
			t.Errorf("parseInt(%q) = %d, %v", s, v, err)
		}
	}
	for _, s := range []string{"", "-", "+3", "1.5", "1e3", " 1", "0x10", "abc", "9223372036854775808"} {
		if _, err := parseInt(s); err == nil {
			t.Errorf("parseInt(%q) accepted", s)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1": true, "127.255.0.9": true, "::1": true,
		"10.0.0.1": false, "::": false, "0.0.0.0": false, "::ffff:127.0.0.1": false, "::2": false,
	} {
		if got := IsLoopback(netip.MustParseAddr(s)); got != want {
			t.Errorf("IsLoopback(%s) = %v, want %v", s, got, want)
		}
	}
}
