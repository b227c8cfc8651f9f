// Package dsl is fibergen's front end: the scanner, parser, syntax tree and
// checker of the optimizer description language (see docs/dsl.md).
//
// Parse turns source text into a *File whose nodes carry positions; Check
// resolves names, classifies every expression as per-step uniform or
// per-coordinate varying and enforces the language's rules, the privacy rule
// among them. Both report problems as an ErrorList of positioned errors, in
// the style of go/scanner: sorted, one per line, capped, and parsing goes on
// after an error so that one run reports as much as it can.
//
// The package depends on the standard library only.
package dsl
