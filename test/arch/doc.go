// Package arch holds the test of the import rules of docs/architecture.md:
// which package of this module may import which, what the Go client and
// the static worker may link. It has no code of its own.
package arch
