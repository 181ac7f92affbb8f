// Package readme finds the code the project's README shows, so that tests
// can check it against the example that go test compiles and runs.
package readme

import (
	"fmt"
	"strings"
)

// GoBlock returns the first Go code block of the section headed
// "## title" in the Markdown text md.
func GoBlock(md, title string) (string, error) {
	_, section, ok := strings.Cut(md, "\n## "+title+"\n")
	if !ok {
		return "", fmt.Errorf("the README has no section %q", title)
	}
	_, code, ok := strings.Cut(section, "```go\n")
	if !ok {
		return "", fmt.Errorf("the section %q has no Go code block", title)
	}
	code, _, ok = strings.Cut(code, "```\n")
	if !ok {
		return "", fmt.Errorf("the code block of section %q does not end", title)
	}
	return code, nil
}
