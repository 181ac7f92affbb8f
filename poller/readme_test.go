package poller_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/internal/readme"
)

// TestREADMELoop checks that the README's "A loop in a few lines" is serve
// in example_test.go, word for word, so that the code a reader copies
// compiles and runs (ExampleLoop_conn runs it).
func TestREADMELoop(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("example_test.go")
	require.NoError(t, err)

	code, err := readme.GoBlock(string(md), "A loop in a few lines")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(code, "func serve("), "the README's loop is not serve:\n%s", code)
	assert.Contains(t, string(example), code, "the README's loop differs from serve in example_test.go")
}
