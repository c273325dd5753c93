package provider

import "strings"

// thinkTags are the reasoning blocks models write into the content when the
// server does not separate them (llama.cpp with --reasoning-format none,
// vLLM without a reasoning parser, Ollama /v1 with think off in the
// server, LM Studio): Qwen3, DeepSeek-R1 and QwQ write <think>, some
// fine-tunes and Claude-style prompts <thinking>.
var thinkTags = []struct{ open, close string }{
	{"<think>", "</think>"},
	{"<thinking>", "</thinking>"},
}

// maxTagLen is the longest tag: at most this many bytes are held back
// while a tag may be arriving split across chunks.
const maxTagLen = len("</thinking>")

// splitter states.
const (
	splitStart  = iota // at the start of the answer: an opening tag may come
	splitThink         // inside a block: everything is thinking up to its closing tag
	splitAnswer        // answer text
)

// thinkSplitter separates thinking blocks from streamed content, chunk by
// chunk, whatever the chunk boundaries (a tag may be split in any place).
//
// A block is recognised only where the answer starts (leading blank space
// allowed), and again right after a block closed: a model that writes
// "<think>" inside its answer, in code or prose, keeps it. A closing tag
// with no opening one, before anything else closed, means the server's
// chat template already emitted the opening tag (DeepSeek-R1 and QwQ
// templates, Qwen3-Thinking-2507): everything streamed before it was
// thinking, and the splitter reports it as moved.
type thinkSplitter struct {
	state    int
	close    string          // the closing tag of the open block
	held     strings.Builder // bytes not yet classified (a possible tag)
	answer   strings.Builder // the answer so far
	thinking strings.Builder // the thinking so far
	closed   bool            // a block was opened or closed: no lone close is looked for any more
	// onAnswer and onThinking receive each classified piece as it is
	// known; onMoved receives the answer so far when it turns out to have
	// been thinking (the piece before a lone closing tag included).
	onAnswer, onThinking, onMoved func(string)
}

// feed classifies one chunk of content.
func (s *thinkSplitter) feed(chunk string) {
	s.held.WriteString(chunk)
	buf := s.held.String()
	s.held.Reset()
	for buf != "" {
		switch s.state {
		case splitStart:
			trimmed := strings.TrimLeft(buf, " \t\r\n")
			if trimmed == "" {
				s.held.WriteString(buf) // only blank so far: wait
				return
			}
			matched, partial := false, false
			for _, t := range thinkTags {
				switch {
				case strings.HasPrefix(trimmed, t.open):
					s.state, s.close, s.closed = splitThink, t.close, true
					buf = trimmed[len(t.open):]
					matched = true
				case strings.HasPrefix(t.open, trimmed):
					partial = true
				}
				if matched {
					break
				}
			}
			if matched {
				continue
			}
			if partial {
				s.held.WriteString(buf)
				return
			}
			s.state = splitAnswer
			if s.answer.Len() == 0 {
				buf = trimmed // the answer does not start with the blank space a block left
			}
		case splitThink:
			if i := strings.Index(buf, s.close); i >= 0 {
				s.think(buf[:i])
				buf = buf[i+len(s.close):]
				s.state = splitStart
				continue
			}
			keep := partialSuffix(buf, s.close)
			s.think(buf[:len(buf)-keep])
			s.held.WriteString(buf[len(buf)-keep:])
			return
		case splitAnswer:
			if s.closed {
				s.say(buf)
				return
			}
			if i, tag := loneClose(buf); i >= 0 {
				before := s.answer.String() + buf[:i]
				s.answer.Reset()
				s.closed = true
				if before != "" {
					s.thinking.WriteString(before)
					if s.onMoved != nil {
						s.onMoved(before)
					}
				}
				buf = buf[i+len(tag):]
				s.state = splitStart
				continue
			}
			keep := 0
			for _, t := range thinkTags {
				keep = max(keep, partialSuffix(buf, t.close))
			}
			s.say(buf[:len(buf)-keep])
			s.held.WriteString(buf[len(buf)-keep:])
			return
		}
	}
}

// finish classifies what is still held back at the end of the stream: a
// block never closed (the output hit its limit) is thinking; a partial tag
// is answer text.
func (s *thinkSplitter) finish() {
	rest := s.held.String()
	s.held.Reset()
	switch {
	case rest == "":
	case s.state == splitThink:
		s.think(rest)
	case s.state == splitStart && strings.TrimSpace(rest) == "":
		// Blank space after a block, before an answer that never came.
	default:
		if s.state == splitStart && s.answer.Len() == 0 {
			rest = strings.TrimLeft(rest, " \t\r\n")
		}
		s.say(rest)
	}
}

func (s *thinkSplitter) think(t string) {
	if t == "" {
		return
	}
	s.thinking.WriteString(t)
	if s.onThinking != nil {
		s.onThinking(t)
	}
}

func (s *thinkSplitter) say(t string) {
	if t == "" {
		return
	}
	s.answer.WriteString(t)
	if s.onAnswer != nil {
		s.onAnswer(t)
	}
}

// loneClose finds the first closing tag in s.
func loneClose(s string) (int, string) {
	best, tag := -1, ""
	for _, t := range thinkTags {
		if i := strings.Index(s, t.close); i >= 0 && (best < 0 || i < best) {
			best, tag = i, t.close
		}
	}
	return best, tag
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag: the bytes that may be the start of a tag split across
// chunks.
func partialSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// answerStream is what the four readers share to deliver content: the
// splitter between the server's content and the events, and the thinking
// the server sent apart (reasoning_content, reasoning, thinking, thinking
// blocks).
type answerStream struct {
	split    thinkSplitter
	apart    strings.Builder // thinking sent in its own field
	onEvent  func(Event)
	finished bool
}

func newAnswerStream(onEvent func(Event)) *answerStream {
	a := &answerStream{onEvent: onEvent}
	emit := func(kind string, moved bool) func(string) {
		return func(t string) {
			if a.onEvent != nil {
				a.onEvent(Event{Kind: kind, Delta: t, Moved: moved})
			}
		}
	}
	a.split.onAnswer = emit(EventText, false)
	a.split.onThinking = emit(EventThinking, false)
	a.split.onMoved = emit(EventThinking, true)
	return a
}

// content takes a piece of the content (the answer, maybe with thinking
// blocks in it).
func (a *answerStream) content(s string) {
	if s != "" {
		a.split.feed(s)
	}
}

// thinking takes a piece of thinking the server sent apart from the
// content.
func (a *answerStream) thinking(s string) {
	if s == "" {
		return
	}
	a.apart.WriteString(s)
	if a.onEvent != nil {
		a.onEvent(Event{Kind: EventThinking, Delta: s})
	}
}

// done ends the stream and returns the answer and the thinking.
func (a *answerStream) done() (answer, thinking string) {
	if !a.finished {
		a.split.finish()
		a.finished = true
	}
	thinking = a.apart.String()
	if t := a.split.thinking.String(); t != "" {
		if thinking != "" {
			thinking += "\n\n"
		}
		thinking += t
	}
	return a.split.answer.String(), thinking
}
