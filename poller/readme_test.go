package poller_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMELoop checks that the README's "A loop in a few lines" is serve
// in example_test.go, word for word, so that the code a reader copies
// compiles and runs (ExampleLoop_conn runs it).
func TestREADMELoop(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)

	_, section, ok := strings.Cut(string(readme), "\n## A loop in a few lines\n")
	require.True(t, ok, "the README has no section \"A loop in a few lines\"")
	_, code, ok := strings.Cut(section, "```go\n")
	require.True(t, ok, "the section has no Go code block")
	code, _, ok = strings.Cut(code, "```\n")
	require.True(t, ok, "the section's code block does not end")
	assert.True(t, strings.HasPrefix(code, "func serve("), "the README's loop is not serve:\n%s", code)
	assert.Contains(t, string(example), code, "the README's loop differs from serve in example_test.go")
}
