package worker

import (
	"errors"
	"fmt"
)

// indentJSON checks that src is exactly one JSON value (white space around
// it allowed) and appends it to dst as json.Indent(dst, src, prefix, indent)
// would after json.HTMLEscape — what json.MarshalIndent makes of a
// json.RawMessage nested one level deep when prefix is "  " and indent is
// "  " — in one pass. encoding/json's scanner goes through a byte at a time
// through a state function; a 1 MB partial_state took it 6–10 ms on the
// benchmark machine, this a fraction of that. FuzzIndentJSON holds it to
// the standard library's output and verdict.
func indentJSON(dst, src []byte, prefix, indent string) ([]byte, error) {
	p := indenter{src: src, out: dst, prefix: prefix, indent: indent}
	p.space()
	if err := p.value(); err != nil {
		return dst, err
	}
	p.space()
	if p.i != len(p.src) {
		return dst, p.errorf("data after the JSON value")
	}
	return p.out, nil
}

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

type indenter struct {
	src            []byte
	i              int
	out            []byte
	prefix, indent string
	depth          int
}

func (p *indenter) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

var errEnd = errors.New("unexpected end of JSON input")

func (p *indenter) space() {
	for p.i < len(p.src) {
		switch p.src[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *indenter) newline(depth int) {
	p.out = append(p.out, '\n')
	p.out = append(p.out, p.prefix...)
	for range depth {
		p.out = append(p.out, p.indent...)
	}
}

func (p *indenter) value() error {
	if p.i >= len(p.src) {
		return errEnd
	}
	switch c := p.src[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return p.errorf("invalid character %q looking for the beginning of a value", c)
	}
}

func (p *indenter) object() error {
	if p.depth++; p.depth > maxNesting {
		return p.errorf("exceeded max depth")
	}
	p.out = append(p.out, '{')
	p.i++
	p.space()
	if p.i < len(p.src) && p.src[p.i] == '}' {
		p.i++
		p.out = append(p.out, '}')
		p.depth--
		return nil
	}
	for {
		p.newline(p.depth)
		if p.i >= len(p.src) {
			return errEnd
		}
		if p.src[p.i] != '"' {
			return p.errorf("invalid character %q looking for the beginning of an object key", p.src[p.i])
		}
		if err := p.str(); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.src) {
			return errEnd
		}
		if p.src[p.i] != ':' {
			return p.errorf("invalid character %q after an object key", p.src[p.i])
		}
		p.i++
		p.out = append(p.out, ':', ' ')
		p.space()
		if err := p.value(); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.src) {
			return errEnd
		}
		switch p.src[p.i] {
		case ',':
			p.i++
			p.out = append(p.out, ',')
			p.space()
		case '}':
			p.i++
			p.depth--
			p.newline(p.depth)
			p.out = append(p.out, '}')
			return nil
		default:
			return p.errorf("invalid character %q after an object value", p.src[p.i])
		}
	}
}

func (p *indenter) array() error {
	if p.depth++; p.depth > maxNesting {
		return p.errorf("exceeded max depth")
	}
	p.out = append(p.out, '[')
	p.i++
	p.space()
	if p.i < len(p.src) && p.src[p.i] == ']' {
		p.i++
		p.out = append(p.out, ']')
		p.depth--
		return nil
	}
	for {
		p.newline(p.depth)
		if err := p.value(); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.src) {
			return errEnd
		}
		switch p.src[p.i] {
		case ',':
			p.i++
			p.out = append(p.out, ',')
			p.space()
		case ']':
			p.i++
			p.depth--
			p.newline(p.depth)
			p.out = append(p.out, ']')
			return nil
		default:
			return p.errorf("invalid character %q after an array element", p.src[p.i])
		}
	}
}

// str copies a string, checking its escapes and escaping <, >, &, U+2028
// and U+2029 as json.HTMLEscape does.
func (p *indenter) str() error {
	p.out = append(p.out, '"')
	p.i++
	start := p.i
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == '"':
			p.out = append(p.out, p.src[start:p.i]...)
			p.out = append(p.out, '"')
			p.i++
			return nil
		case c < 0x20:
			return p.errorf("invalid character %q in string literal", c)
		case c == '\\':
			if p.i+1 >= len(p.src) {
				return errEnd
			}
			switch p.src[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.src) {
					for _, h := range p.src[p.i+2:] {
						if !isHex(h) {
							return p.errorf("invalid character %q in \\u hexadecimal character escape", h)
						}
					}
					return errEnd
				}
				for _, h := range p.src[p.i+2 : p.i+6] {
					if !isHex(h) {
						return p.errorf("invalid character %q in \\u hexadecimal character escape", h)
					}
				}
				p.i += 6
			default:
				return p.errorf("invalid character %q in string escape code", p.src[p.i+1])
			}
		case c == '<' || c == '>' || c == '&':
			p.out = append(p.out, p.src[start:p.i]...)
			p.out = append(p.out, '\\', 'u', '0', '0', hexDigit[c>>4], hexDigit[c&0xf])
			p.i++
			start = p.i
		case c == 0xe2 && p.i+2 < len(p.src) && p.src[p.i+1] == 0x80 && p.src[p.i+2]&^1 == 0xa8:
			p.out = append(p.out, p.src[start:p.i]...)
			p.out = append(p.out, '\\', 'u', '2', '0', '2', hexDigit[p.src[p.i+2]&0xf])
			p.i += 3
			start = p.i
		default:
			p.i++
		}
	}
	return errEnd
}

const hexDigit = "0123456789abcdef"

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (p *indenter) literal(word string) error {
	for k := 0; k < len(word); k++ {
		if p.i+k >= len(p.src) {
			return errEnd
		}
		if p.src[p.i+k] != word[k] {
			return p.errorf("invalid character %q in literal %s (expecting %q)", p.src[p.i+k], word, word[k])
		}
	}
	p.out = append(p.out, word...)
	p.i += len(word)
	return nil
}

// number copies -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *indenter) number() error {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.src) && p.src[p.i] >= '0' && p.src[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	want := func(what string) error {
		if p.i >= len(p.src) {
			return errEnd
		}
		return p.errorf("invalid character %q %s", p.src[p.i], what)
	}
	if p.src[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.src) && p.src[p.i] == '0':
		p.i++
	case digits() == 0:
		return want("in numeric literal")
	}
	if p.i < len(p.src) && p.src[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return want("after decimal point in numeric literal")
		}
	}
	if p.i < len(p.src) && (p.src[p.i] == 'e' || p.src[p.i] == 'E') {
		p.i++
		if p.i < len(p.src) && (p.src[p.i] == '+' || p.src[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return want("in exponent of numeric literal")
		}
	}
	p.out = append(p.out, p.src[start:p.i]...)
	return nil
}
