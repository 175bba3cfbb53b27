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
  // Only when that character runs past the cut; otherwise (bytes that are not UTF-8) cut as asked.
  return end - at > 0 && leadLength(buf[at]) > end - at ? at : end
}

// How many bytes the character this byte leads takes (0: not a lead byte).
function leadLength (byte) {
  if ((byte & 0xe0) === 0xc0) return 2
  if ((byte & 0xf0) === 0xe0) return 3
  if ((byte & 0xf8) === 0xf0) return 4
  return 0
}

module.exports = { utf8Boundary }
