//go:build linux || freebsd || netbsd || openbsd || dragonfly

package rss

// maxrssUnit is the unit of ru_maxrss: Linux and the BSDs report kilobytes.
const maxrssUnit = 1024
