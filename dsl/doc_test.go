package dsl_test

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
)

const docPath = "../docs/dsl.md"

// A block is a fenced code block of a Markdown file.
type block struct {
	lang, text string
	line       int
}

func codeBlocks(doc string) []block {
	var blocks []block
	var cur *block
	for i, line := range strings.Split(doc, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{lang: strings.TrimPrefix(line, "```"), line: i + 1}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return blocks
}

// TestDocExamples checks the examples of docs/dsl.md: every dsl block is a
// whole file that checks without errors, unless a console block running
// fibergen check on it follows, which must show exactly its errors.
func TestDocExamples(t *testing.T) {
	blocks := codeBlocks(string(readFile(t, docPath)))
	n := 0
	for i, b := range blocks {
		if b.lang != "dsl" {
			continue
		}
		n++
		name, want := "example.dsl", ""
		if i+1 < len(blocks) && blocks[i+1].lang == "console" {
			cmd, out, _ := strings.Cut(blocks[i+1].text, "\n")
			name, want = strings.TrimPrefix(cmd, "$ fibergen check "), out
			if want == "" {
				t.Errorf("%s:%d: console block without output", docPath, blocks[i+1].line)
			}
		}
		_, _, errs := dsl.Parse(name, []byte(b.text))
		var got bytes.Buffer
		errs.Print(&got, []byte(b.text))
		if got.String() != want {
			t.Errorf("%s:%d: fibergen check %s prints\n%s\nwant\n%s", docPath, b.line, name, got.String(), want)
		}
	}
	if n < 3 {
		t.Errorf("%s has %d dsl blocks, want at least 3", docPath, n)
	}
}

// TestDocMessages checks the table of messages in docs/dsl.md against the
// messages the error tests produce, both ways: each message of the table
// (… standing for anything) is produced, and each produced message is in
// the table.
func TestDocMessages(t *testing.T) {
	doc := string(readFile(t, docPath))
	_, table, ok := strings.Cut(doc, "The complete list")
	if !ok {
		t.Fatalf("%s: no complete list of messages", docPath)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var patterns []*regexp.Regexp
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[2], "`") {
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[2], -1) {
			parts := strings.Split(m[1], "…")
			for i, p := range parts {
				parts[i] = regexp.QuoteMeta(p)
			}
			patterns = append(patterns, regexp.MustCompile("^"+strings.Join(parts, ".*")+"$"))
		}
	}
	if len(patterns) < 40 {
		t.Fatalf("found %d messages in the table, want at least 40", len(patterns))
	}
	msgs := producedMessages(t)
	for _, re := range patterns {
		if !matchesAny(re, msgs) {
			t.Errorf("no test produces the documented message %s", re)
		}
	}
	for _, m := range msgs {
		found := false
		for _, re := range patterns {
			found = found || re.MatchString(m)
		}
		if !found {
			t.Errorf("message not in the table of %s: %s", docPath, m)
		}
	}
}

func matchesAny(re *regexp.Regexp, msgs []string) bool {
	for _, m := range msgs {
		if re.MatchString(m) {
			return true
		}
	}
	return false
}

// producedMessages collects the messages for the error test files and
// sources, an expression nested too deeply and a file with too many errors.
func producedMessages(t *testing.T) []string {
	var srcs [][]byte
	files, _ := filepath.Glob("testdata/errors/*.dsl")
	for _, path := range files {
		srcs = append(srcs, readFile(t, path))
	}
	for _, s := range errorSources {
		srcs = append(srcs, []byte(s.src))
	}
	srcs = append(srcs,
		[]byte("optimizer x\nstate s = "+strings.Repeat("(", 300)+"\n"),
		[]byte("optimizer x\n"+strings.Repeat("lr = 2\n", 12)+"step { theta = g }\n"))
	var msgs []string
	for _, src := range srcs {
		_, _, errs := dsl.Parse("x.dsl", src)
		for _, e := range errs {
			msgs = append(msgs, e.Msg)
		}
	}
	if len(msgs) < 100 {
		t.Fatalf("only %d messages", len(msgs))
	}
	return msgs
}

// TestDocsShowShippedFiber checks that docs/dsl.md and the README show
// optimizers/fiber.dsl as shipped, from its optimizer line on.
func TestDocsShowShippedFiber(t *testing.T) {
	src := string(readFile(t, "../optimizers/fiber.dsl"))
	want := src[strings.Index(src, "optimizer fiber"):]
	for _, doc := range []string{docPath, "../README.md"} {
		shown := false
		for _, b := range codeBlocks(string(readFile(t, doc))) {
			shown = shown || b.text == want
		}
		if !shown {
			t.Errorf("%s shows no code block equal to optimizers/fiber.dsl from `optimizer fiber` on", doc)
		}
	}
}
