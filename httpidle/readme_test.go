package httpidle_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's net/http section shows serveIdle from example_test.go,
// which go test compiles and runs: the two must not drift apart.
func TestREADMEHTTP(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)

	_, section, ok := strings.Cut(string(readme), "\n## net/http\n")
	require.True(t, ok, "the README has no section \"net/http\"")
	_, code, ok := strings.Cut(section, "```go\n")
	require.True(t, ok, "the section has no Go code block")
	code, _, ok = strings.Cut(code, "```\n")
	require.True(t, ok, "the section's code block does not end")
	assert.True(t, strings.HasPrefix(code, "func serveIdle("), "the README's server is not serveIdle:\n%s", code)
	assert.Contains(t, string(example), code, "the README's server differs from serveIdle in example_test.go")
}
