'use strict'

/**
 * The largest index ≤ `end` in `buf` that does not fall inside a UTF-8
 * character: where bytes may be cut to a bound without the text read
 * from them ending in a U+FFFD the sender never sent. Bytes that are not
 * UTF-8 are cut where asked (at most 3 bytes back are looked at).
 */
function utf8Boundary (buf, end) {
  if (end >= buf.length) return buf.length
  let at = end
  // A continuation byte (10xxxxxx) at the cut: back to its character's lead byte.
  while (at > 0 && end - at < 3 && (buf[at] & 0xc0) === 0x80) at--
  if ((buf[at] & 0xc0) === 0x80) return end // not UTF-8 here: cut as asked
  return at
}

module.exports = { utf8Boundary }
