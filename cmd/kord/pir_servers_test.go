package main

import (
	"strings"
	"testing"
)

// TestPIRQuerySameServerRefused: two --servers addresses that reach one
// host:port are refused before any key is sent (one server would get both
// keys of the query and learn the index); two ports of one host are not.
func TestPIRQuerySameServerRefused(t *testing.T) {
	for _, servers := range []string{
		"127.0.0.1:7001,127.0.0.1:7001",
		"localhost:7001,127.0.0.1:7001",
		"127.0.0.1:7001,[::1]:7001",
		"0.0.0.0:7001,127.0.0.2:7001",
	} {
		_, errOut, code := runKord(t, "pir", "query", "--servers", servers, "--index", "0", "--timeout", "5s")
		if code != 2 || !strings.Contains(errOut, "same server") {
			t.Errorf("--servers %s: exit %d, %q; want 2 naming the same server", servers, code, errOut)
		}
	}
	_, errOut, code := runKord(t, "pir", "query", "--servers", "127.0.0.1:1,127.0.0.1:2", "--index", "0", "--timeout", "2s")
	if code == 2 && strings.Contains(errOut, "same server") {
		t.Errorf("two ports of one host refused as one server: %q", errOut)
	}
	_, errOut, code = runKord(t, "pir", "query", "--servers", "127.0.0.1,127.0.0.1:2", "--index", "0")
	if code != 2 || !strings.Contains(errOut, "host:port") {
		t.Errorf("an address without a port: exit %d, %q", code, errOut)
	}
}
