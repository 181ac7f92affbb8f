//go:build darwin

package rss

// maxrssUnit is the unit of ru_maxrss: darwin reports bytes.
const maxrssUnit = 1
