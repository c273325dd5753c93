package session

import "container/list"

// lineCache keeps the raw lines of recently appended or loaded entries so
// that the live tail of a session is read from memory, not disk. It is
// bounded both by entry count and by bytes, because one tool result can be
// much larger than a hundred user messages. Lines, not decoded entries, are
// kept: every Load decodes afresh, so callers may modify what they get.
//
// lineCache is not safe for concurrent use; Store guards it with its mutex.
type lineCache struct {
	maxEntries, maxBytes int
	bytes                int
	order                *list.List // front = most recent; values are *cachedLine
	byID                 map[string]*list.Element
}

type cachedLine struct {
	id   string
	line []byte
}

func newLineCache(maxEntries, maxBytes int) *lineCache {
	return &lineCache{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}}
}

// get returns the cached line of id and marks it recent.
func (c *lineCache) get(id string) ([]byte, bool) {
	el, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cachedLine).line, true
}

// put stores line (which the cache now owns) under id, evicting the least
// recent lines past either bound. A line larger than the byte bound is not
// kept at all.
func (c *lineCache) put(id string, line []byte) {
	if c.maxEntries <= 0 || len(line) > c.maxBytes {
		return
	}
	if el, ok := c.byID[id]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.byID[id] = c.order.PushFront(&cachedLine{id: id, line: line})
	c.bytes += len(line)
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		el := c.order.Back()
		cl := el.Value.(*cachedLine)
		c.order.Remove(el)
		delete(c.byID, cl.id)
		c.bytes -= len(cl.line)
	}
}
