package dsl

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// scanner turns source text into tokens. Like Go's scanner it inserts a SEMI
// at a newline that follows a token which can end a statement, so statements
// end at the end of a line unless the line ends in an operator.
type scanner struct {
	filename string
	src      []byte
	errs     *ErrorList
	loneCR   bool // a carriage return without a newline was reported

	offset     int // offset of the next unread byte
	line       int // line of offset
	lineOffset int // offset of the first byte of line
	insertSemi bool
}

func newScanner(filename string, src []byte, errs *ErrorList) *scanner {
	return &scanner{filename: filename, src: src, errs: errs, line: 1}
}

func (s *scanner) pos(offset int) Pos {
	return Pos{Filename: s.filename, Offset: offset, Line: s.line, Column: offset - s.lineOffset + 1}
}

func (s *scanner) errorf(offset int, format string, args ...any) {
	s.errs.Addf(s.pos(offset), format, args...)
}

func (s *scanner) peek(k int) byte {
	if s.offset+k < len(s.src) {
		return s.src[s.offset+k]
	}
	return 0
}

// skipSpace skips blanks and comments. It stops at a newline where a SEMI is
// due and returns the SEMI's offset: that of the newline or, as in Go, of
// the comment before it, so that errors about the newline point just past
// the code. It returns -1 if it stopped at a token or at the end of file.
func (s *scanner) skipSpace() (semi int) {
	semi = -1
	for s.offset < len(s.src) {
		switch c := s.src[s.offset]; {
		case c == '\n':
			if s.insertSemi {
				if semi < 0 {
					semi = s.offset
				}
				return semi
			}
			s.offset++
			s.line++
			s.lineOffset = s.offset
		case c == '\r' && s.peek(1) != '\n' && !s.loneCR:
			// CR-only line endings (classic Mac OS) would run the whole file
			// into one line: say so once, and go on as if it were blank.
			s.loneCR = true
			s.errorf(s.offset, "a carriage return without a newline: fibergen reads LF or CRLF line endings (convert the file, e.g. with tr '\\r' '\\n')")
			s.offset++
		case c == ' ' || c == '\t' || c == '\r':
			s.offset++
		case c == '/' && s.peek(1) == '/', c == '#':
			if semi < 0 {
				semi = s.offset
			}
			for s.offset < len(s.src) && s.src[s.offset] != '\n' {
				s.offset++
			}
		default:
			return -1
		}
	}
	return -1
}

// next returns the next token, its position and its literal text.
func (s *scanner) next() (Token, Pos, string) {
	if semi := s.skipSpace(); semi >= 0 {
		s.insertSemi = false
		return SEMI, s.pos(semi), "\n"
	}
	start := s.offset
	pos := s.pos(start)
	if start >= len(s.src) {
		if s.insertSemi {
			s.insertSemi = false
			return SEMI, pos, "\n"
		}
		return EOF, pos, ""
	}
	tok, lit := s.scanToken()
	switch tok {
	case IDENT, NUMBER, INF, RPAREN, RBRACK, RBRACE, ILLEGAL:
		// A bad character ends a line too, so that it does not join two
		// lines into one error.
		s.insertSemi = true
	default:
		s.insertSemi = false
	}
	return tok, pos, lit
}

func (s *scanner) scanToken() (Token, string) {
	start := s.offset
	c := s.src[start]
	switch {
	case isLetter(c):
		for s.offset < len(s.src) && (isLetter(s.src[s.offset]) || isDigit(s.src[s.offset])) {
			s.offset++
		}
		lit := string(s.src[start:s.offset])
		return Lookup(lit), lit
	case isDigit(c) || c == '.' && isDigit(s.peek(1)):
		return NUMBER, s.scanNumber()
	}
	s.offset++
	switch c {
	case '+':
		return ADD, "+"
	case '-':
		return SUB, "-"
	case '*':
		if s.peek(0) == '*' {
			s.offset++
			return POW, "**"
		}
		return MUL, "*"
	case '/':
		return QUO, "/"
	case '=':
		if s.peek(0) == '=' {
			s.offset++
			return EQL, "=="
		}
		return ASSIGN, "="
	case '<', '>', '!':
		return s.scanComparison(c)
	case ',':
		return COMMA, ","
	case ':':
		return COLON, ":"
	case ';':
		return SEMI, ";"
	case '(':
		return LPAREN, "("
	case ')':
		return RPAREN, ")"
	case '[':
		return LBRACK, "["
	case ']':
		return RBRACK, "]"
	case '{':
		return LBRACE, "{"
	case '}':
		return RBRACE, "}"
	}
	return s.scanIllegal(start)
}

// scanComparison scans <, <=, >, >= and != after their first character.
func (s *scanner) scanComparison(c byte) (Token, string) {
	eq := s.peek(0) == '='
	if eq {
		s.offset++
	}
	switch {
	case c == '<' && eq:
		return LEQ, "<="
	case c == '<':
		return LSS, "<"
	case c == '>' && eq:
		return GEQ, ">="
	case c == '>':
		return GTR, ">"
	case eq:
		return NEQ, "!="
	}
	return s.scanIllegal(s.offset - 1)
}

// scanIllegal consumes one (possibly multi-byte) character and reports it.
func (s *scanner) scanIllegal(start int) (Token, string) {
	r, size := utf8.DecodeRune(s.src[start:])
	s.offset = start + size
	switch {
	case r == utf8.RuneError && size <= 1:
		s.errorf(start, "invalid UTF-8 byte %#02x", s.src[start])
	case unicode.IsPrint(r):
		s.errorf(start, "unexpected character %q", r)
	default:
		s.errorf(start, "unexpected character %U", r)
	}
	return ILLEGAL, string(s.src[start:s.offset])
}

// scanNumber scans digits [. digits] [(e|E) [+|-] digits].
func (s *scanner) scanNumber() string {
	start := s.offset
	s.digits()
	if s.peek(0) == '.' {
		s.offset++
		s.digits()
	}
	if c := s.peek(0); c == 'e' || c == 'E' {
		s.offset++
		if c := s.peek(0); c == '+' || c == '-' {
			s.offset++
		}
		if !isDigit(s.peek(0)) {
			s.errorf(start, "malformed number %q: exponent has no digits", string(s.src[start:s.offset]))
		}
		s.digits()
	}
	if isLetter(s.peek(0)) {
		s.errorf(s.offset, "unexpected %q after number", rune(s.peek(0)))
	}
	return string(s.src[start:s.offset])
}

func (s *scanner) digits() {
	for isDigit(s.peek(0)) {
		s.offset++
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// describe names a token for an error message.
func describe(tok Token, lit string) string {
	switch tok {
	case IDENT, NUMBER:
		return fmt.Sprintf("%s %s", tok, lit)
	case SEMI:
		if lit == "\n" {
			return "newline"
		}
		return "';'"
	case EOF:
		return "end of file"
	case ILLEGAL:
		return fmt.Sprintf("%q", lit)
	}
	if tok > keywordBeg && tok < keywordEnd {
		return "keyword " + lit
	}
	return "'" + lit + "'"
}
