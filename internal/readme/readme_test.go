package readme

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoBlock(t *testing.T) {
	md := "# x\n\n## A\n\ntext\n\n```go\nfunc a() {}\n```\n\n## B\n\n```sh\nls\n```\n"
	code, err := GoBlock(md, "A")
	require.NoError(t, err)
	assert.Equal(t, "func a() {}\n", code)

	_, err = GoBlock(md, "C")
	assert.ErrorContains(t, err, "no section")
	_, err = GoBlock(md, "B")
	assert.ErrorContains(t, err, "no Go code block")
	_, err = GoBlock("\n## A\n```go\nfunc a() {}\n", "A")
	assert.ErrorContains(t, err, "does not end")
}
