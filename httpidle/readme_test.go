package httpidle_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/internal/readme"
)

// The README's net/http section shows serveIdle from example_test.go,
// which go test compiles and runs: the two must not drift apart.
func TestREADMEHTTP(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)

	code, err := readme.GoBlock(string(md), "net/http")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(code, "func serveIdle("), "the README's server is not serveIdle:\n%s", code)
	assert.Contains(t, string(example), code, "the README's server differs from serveIdle in example_test.go")
}
